"""The learned ranker's model: a pairwise logistic regression over a candidate's features,
trained deterministically.

Training sees pairs of one recall's served results, the preferred one first, each pair with a
weight (its inverse examination propensity times the trust of the agent who said it). The
loss is the weighted logistic loss of the score difference, plus an L2 pull towards a prior
(the global model, or zero), minimised by Newton's method: the model has a dozen weights, so
each step solves a dozen-by-dozen system, and the same pairs in the same order give the same
weights. Weights are rounded before they are used or digested, so a model trained again from
the same log prefix has the same digest on any machine whose floats agree to 1e-9.
"""

from __future__ import annotations

import functools
import hashlib
import json

import msgspec
import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from . import kernels
from .features import FEATURES, LEARNED

# The order before the ranker is the starting point: a candidate's score starts at
# ``-log(1 + position)`` (position 0 = first), so with no evidence the odds of placing i above
# j are ``(1 + pos_j) / (1 + pos_i)``, and learned weights move a candidate only as far as the
# feedback supports. The order before the ranker already weighs every stage's score (fusion,
# recency, diversity, links); weights learned for those scores again from uses, which are
# noisy, undid those rules for every query (bench/feedback.py: NDCG@5 on questions no agent
# asked fell from 0.48 to 0.38), so only the features of ``LEARNED`` get weights.
POSITION = FEATURES.index("position")
_LEARNED = np.asarray([name in LEARNED for name in FEATURES])

Matrix = npt.NDArray[np.float64]

L2 = 1.0  # the pull towards the prior, per unit of total pair weight (scaled below)
NEWTON_STEPS = 25
TOLERANCE = 1e-10
MIN_SCALE = 1e-3
DECIMALS = 9  # weights are rounded to this many decimals before use and digest


class Model(msgspec.Struct, frozen=True, kw_only=True):
    """A trained ranker: ``score(x) = weights . ((x - mean) / scale)``."""

    features: tuple[str, ...]
    weights: tuple[float, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    pairs: int  # how many pairs it was trained on
    through_seq: int  # the last log seq whose feedback it learned from

    @property
    def digest(self) -> str:
        """sha256 of the model's canonical JSON: what the log records instead of its bytes."""
        return digest_of(self)

    def score(self, x: Matrix) -> npt.NDArray[np.float64]:
        """``weights . ((x - mean) / scale)`` less the position feature, for each row of x."""
        mean, scale, weights = _arrays(self)
        return kernels.compiled()[3](np.ascontiguousarray(x), mean, scale, weights, POSITION)

    def explained(self) -> dict[str, float]:
        """Each feature's weight, per standard deviation of it: what a trace shows."""
        return dict(zip(self.features, self.weights, strict=True))


@functools.lru_cache(maxsize=64)
def _arrays(model: Model) -> tuple[Matrix, Matrix, Matrix]:
    """A model's mean, scale and weights as arrays, made once per model (not to be changed)."""
    return np.asarray(model.mean), np.asarray(model.scale), np.asarray(model.weights)


def digest_of(model: Model) -> str:
    body = {
        "features": list(model.features),
        "weights": [repr(w) for w in model.weights],
        "mean": [repr(m) for m in model.mean],
        "scale": [repr(s) for s in model.scale],
        "pairs": model.pairs,
        "throughSeq": model.through_seq,
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


class Pairs(msgspec.Struct, kw_only=True):
    """Training pairs: ``better[i]`` was preferred to ``worse[i]`` with weight ``weight[i]``;
    both are row indexes into ``x``."""

    x: Matrix
    better: npt.NDArray[np.int64]
    worse: npt.NDArray[np.int64]
    weight: npt.NDArray[np.float64]


def train(
    pairs: Pairs,
    *,
    through_seq: int,
    prior: Model | None = None,
    l2: float = L2,
) -> Model:
    """The weights minimising the weighted pairwise logistic loss, pulled towards ``prior``'s
    weights (re-expressed on this data's scale), or towards zero without one."""
    count = len(FEATURES)
    if len(pairs.weight) == 0:
        raise ValueError("no pairs to train on")
    mean = pairs.x.mean(axis=0)
    scale = pairs.x.std(axis=0)
    # A feature that hardly varies (ages of memories written seconds apart, in days) is not
    # blown up into noise: a spread under MIN_SCALE counts as MIN_SCALE.
    scale = np.maximum(scale, MIN_SCALE)
    mean, scale = _rounded(mean), _rounded(scale)
    z = (pairs.x - mean) / scale
    z[:, ~_LEARNED] = 0.0  # their weights stay 0
    diff = z[pairs.better] - z[pairs.worse]
    anchor = pairs.x[pairs.worse, POSITION] - pairs.x[pairs.better, POSITION]
    weight = pairs.weight / pairs.weight.mean()
    target = np.zeros(count)
    if prior is not None:
        # The prior's weight on a raw feature, on this data's scale.
        target = np.asarray(prior.weights) / np.asarray(prior.scale) * scale * _LEARNED
    strength = l2
    w = target.copy()
    with threadpool_limits(limits=1):
        for _ in range(NEWTON_STEPS):
            margin = anchor + diff @ w
            p = _sigmoid(-margin)  # the gradient's share of each pair
            gradient = -(diff * (weight * p)[:, None]).sum(axis=0) + strength * (w - target)
            curvature = weight * p * (1.0 - p)
            hessian = (diff * curvature[:, None]).T @ diff + strength * np.eye(count)
            step = np.linalg.solve(hessian, gradient)
            w = w - step
            if float(np.abs(step).max()) < TOLERANCE:
                break
    return Model(
        features=FEATURES,
        weights=tuple(float(v) for v in _rounded(w)),
        mean=tuple(float(v) for v in mean),
        scale=tuple(float(v) for v in scale),
        pairs=len(pairs.weight),
        through_seq=through_seq,
    )


def _rounded(values: Matrix) -> Matrix:
    return np.round(values, DECIMALS) + 0.0  # + 0.0: no negative zero in a digest


def _sigmoid(v: Matrix) -> Matrix:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * v)), dtype=np.float64)
