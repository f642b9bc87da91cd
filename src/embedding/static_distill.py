"""Distil the fast tier's static token vectors from the quality model, with numpy only.

The recipe is model2vec's ``distill``, done without torch:

1. The special tokens and the ``[unusedN]`` placeholders are set aside: their rows end as
   zeros, except the ``[CLS]`` row, which keeps the empty text's vector (the fast tier answers
   it for a text with no known token).
2. Every other vocabulary id runs through the ONNX model alone, as ``[CLS] id [SEP]``; its
   vector is the mean of the three output states. ``[CLS] [SEP]`` (the empty text) runs too.
3. PCA on the remaining rows, with numpy: centre on their mean, eigen-decompose the 384 x 384
   covariance (float64), keep the 256 components of largest variance (95.9% of it). An
   eigenvector's sign is arbitrary, so each is fixed: the sum of the 100 largest-magnitude
   scores on it must be positive. A sum over many rows resists the float noise of a rebuild on
   another CPU better than one row's score does (the smallest margin measured is 0.16% of the
   sum's magnitude), so a rebuild gives the same vectors, not mirrored ones.
4. SIF weighting under a Zipf prior, as model2vec does. A BERT vocabulary is ordered roughly
   by frequency, so the kept token at position ``k`` (0-based, in id order) gets the Zipf
   probability ``p_k = (1 / (k + 2)) / sum_j (1 / (j + 2))`` and its row is multiplied by
   ``a / (a + p_k)`` with ``a = 1e-4``: frequent tokens (``the``, ``,``) weigh less in a
   sentence's mean, rare ones keep their weight.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from .vocab import SPECIAL_TOKENS

PCA_DIMS = 256
SIF_COEFFICIENT = 1e-4
ZIPF_OFFSET = 2
SIGN_ROWS = 100
DISTILL_BATCH = 256  # rows of three tokens each: the fastest size measured on 2 cores

_UNUSED = re.compile(r"\[unused\d+\]")

Pooler = Callable[[npt.NDArray[np.int64], npt.NDArray[np.int64]], npt.NDArray[np.float32]]
# Told (done, total) as the tokens are run through the model: most of a distillation's time.
Progress = Callable[[int, int], None]


def set_aside(vocab: dict[str, int]) -> npt.NDArray[np.bool_]:
    """True for the ids that get no vector of their own (special and unused tokens)."""
    mask = np.zeros(len(vocab), dtype=np.bool_)
    for token, i in vocab.items():
        if token in SPECIAL_TOKENS or _UNUSED.fullmatch(token):
            mask[i] = True
    return mask


def token_vectors(
    pooled: Pooler,
    ids: npt.NDArray[np.int64],
    cls_id: int,
    sep_id: int,
    progress: Progress | None = None,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Mean-pooled model output of ``[CLS] id [SEP]`` for each id, and of ``[CLS] [SEP]``;
    ``progress`` is told how many ids are done, of how many, after each batch."""
    parts: list[npt.NDArray[np.float32]] = []
    for start in range(0, len(ids), DISTILL_BATCH):
        chunk = ids[start : start + DISTILL_BATCH]
        batch = np.stack([np.full_like(chunk, cls_id), chunk, np.full_like(chunk, sep_id)], axis=1)
        parts.append(pooled(batch, np.ones_like(batch)))
        if progress is not None:
            progress(start + len(chunk), len(ids))
    empty_ids = np.array([[cls_id, sep_id]], dtype=np.int64)
    empty = pooled(empty_ids, np.ones_like(empty_ids))[0]
    return np.concatenate(parts, axis=0), empty


def fit_pca(
    rows: npt.NDArray[np.floating], dims: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Mean, components ``(dims, d)`` with fixed signs, and all eigenvalues (descending)."""
    data = rows.astype(np.float64)
    mean = data.mean(axis=0)
    centred = data - mean
    covariance = centred.T @ centred / (len(data) - 1)
    eigenvalues, eigenvectors = np.linalg.eigh(covariance)
    eigenvalues = eigenvalues[::-1]
    components = eigenvectors[:, ::-1][:, :dims].T.copy()
    scores = centred @ components.T
    top = np.argsort(-np.abs(scores), axis=0, kind="stable")[:SIGN_ROWS]
    signs = np.sign(np.take_along_axis(scores, top, axis=0).sum(axis=0))
    signs[signs == 0] = 1.0
    components *= signs[:, None]
    return mean, components, eigenvalues


def sif_weights(count: int, coefficient: float = SIF_COEFFICIENT) -> npt.NDArray[np.float64]:
    """SIF weights ``a / (a + p_k)`` for ``count`` tokens in frequency order (Zipf prior)."""
    inverse_rank = 1.0 / np.arange(ZIPF_OFFSET, count + ZIPF_OFFSET, dtype=np.float64)
    probability = inverse_rank / inverse_rank.sum()
    weights: npt.NDArray[np.float64] = coefficient / (coefficient + probability)
    return weights


def distil(
    pooled: Pooler,
    vocab: dict[str, int],
    dims: int = PCA_DIMS,
    progress: Progress | None = None,
) -> npt.NDArray[np.float32]:
    """The static matrix ``(len(vocab), dims)``, float32, row ``i`` for token id ``i``."""
    cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]
    kept = np.flatnonzero(~set_aside(vocab)).astype(np.int64)
    rows, empty = token_vectors(pooled, kept, cls_id, sep_id, progress)
    mean, components, _ = fit_pca(rows, dims)
    projected = (rows.astype(np.float64) - mean) @ components.T
    matrix = np.zeros((len(vocab), dims), dtype=np.float64)
    matrix[kept] = projected * sif_weights(len(kept))[:, None]
    matrix[cls_id] = (empty.astype(np.float64) - mean) @ components.T
    return matrix.astype(np.float32)
