"""Fitting a poisoning head (``poisoning_head``) to labelled texts: deterministic, numpy only.

A logistic regression with an L2 penalty, the two classes weighted to balance, fitted by
Newton's method from zero for a fixed number of steps: the same inputs give the same weights
on any machine, up to the last bits of floating-point sums. Its cut is the score that
``BENIGN_CUT`` of the benign texts reach when each is scored by a head fitted without its
fold (folds drawn with a fixed seed), so the budget is judged on texts the head did not see.
Used by ``tools/train_poisoning_head.py`` (which writes the shipped heads) and
``bench/poisoning_head.py`` (which measures how far they carry to batches held out).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ...embedding.identity import EmbedderIdentity
from .head import HEAD_FORMAT, Head, head_features
from .rules import RULE_REASONS, detect

__all__ = [
    "BENIGN_CUT",
    "FOLDS",
    "PENALTY",
    "RULE_REASONS",
    "features_of",
    "fit",
    "held_out_scores",
    "scores",
    "train",
]

PENALTY = 0.01  # L2, on every weight but the bias
NEWTON_STEPS = 30
FOLDS = 5
BENIGN_CUT = 0.01  # the share of held-out benign texts the cut lets through as flagged


def features_of(texts: Sequence[str], vectors: NDArray[np.floating]) -> NDArray[np.float64]:
    """Each text's features: its vector, then the rule reasons it was flagged for."""
    return np.stack(
        [
            head_features(vector, detect(text), RULE_REASONS)
            for text, vector in zip(texts, vectors, strict=True)
        ]
    )


def _with_bias(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.hstack([x, np.ones((len(x), 1))])


def fit(
    x: NDArray[np.float64], y: NDArray[np.int64], penalty: float = PENALTY
) -> NDArray[np.float64]:
    """Weights then bias of the regression of ``y`` (0/1) on ``x``."""
    xa = _with_bias(x)
    n, d = xa.shape
    positives = int(y.sum())
    if positives in (0, n):
        raise ValueError("both classes are needed")
    weight = np.where(y == 1, n / (2 * positives), n / (2 * (n - positives)))
    ridge = penalty * np.eye(d)
    ridge[-1, -1] = 0.0  # the bias is not penalised
    w = np.zeros(d)
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-(xa @ w)))
        gradient = xa.T @ (weight * (p - y)) + ridge @ w
        hessian = (xa * (weight * p * (1.0 - p))[:, None]).T @ xa + ridge
        w -= np.linalg.solve(hessian, gradient)
    return w


def scores(w: NDArray[np.float64], x: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(1.0 / (1.0 + np.exp(-(_with_bias(x) @ w))))


def held_out_scores(
    x: NDArray[np.float64], y: NDArray[np.int64], penalty: float = PENALTY
) -> NDArray[np.float64]:
    """Each text's score by a head fitted on the other folds."""
    folds = np.random.default_rng(0).integers(0, FOLDS, len(y))
    out = np.zeros(len(y))
    for f in range(FOLDS):
        inside = folds != f
        out[~inside] = scores(fit(x[inside], y[inside], penalty), x[~inside])
    return out


def train(
    identity: EmbedderIdentity,
    x: NDArray[np.float64],
    y: NDArray[np.int64],
    counts: dict[str, int],
    *,
    version: int,
    penalty: float = PENALTY,
    benign_cut: float = BENIGN_CUT,
) -> Head:
    """The head for ``identity`` fitted to every text, with its cut from held-out scores."""
    held = held_out_scores(x, y, penalty)
    cut = float(np.quantile(held[y == 0], 1.0 - benign_cut))
    w = fit(x, y, penalty)
    return Head(
        format=HEAD_FORMAT,
        version=version,
        embedder=identity,
        reasons=list(RULE_REASONS),
        weights=[round(float(v), 8) for v in w[:-1]],
        bias=round(float(w[-1]), 8),
        cut=round(cut, 6),
        trained_on=counts,
    )
