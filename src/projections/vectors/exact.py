"""The exact scan: every indexed vector, unit length, one row per label in one matrix, and the
``k`` best rows of a scan of it (best first, equal similarities by label).

A search restricted to a small set of labels (one container's live versions, the versions valid
at an instant) is an exact scan of those rows: ~0.1 ms for 1,500 256-d rows, against ~1.2 ms
for hnswlib's filtered search, whose filter is a Python call per visited node. The scan is
also exact and deterministic, which approximate search is not. The matrix is filled as rows
are added; after ``load`` it is filled from the vectors the source projection stores, when they
are exactly the graph's (otherwise from the graph by a background thread: hnswlib copies out
~55k vectors/s, and until then filtered searches use the graph): see ``MatrixFill``.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import NamedTuple

import hnswlib
import numpy as np
from numpy.typing import NDArray

from ...embedding.port import stacked_vectors
from ..journaled import JournaledSet
from .files import MIN_CAPACITY


class StoredVectors(NamedTuple):
    """Vectors kept by the source an index is built from: ascending labels, one row each."""

    labels: NDArray[np.int64]
    data: NDArray[np.float32]


__all__ = [
    "EXACT_CHUNK",
    "EXACT_SCAN_MAX",
    "MIRROR_FILL_CHUNK",
    "MatrixFill",
    "Mirror",
    "clamp",
    "stored_matrix",
    "top_k",
    "top_k_many",
    "unit",
]


def stored_matrix(found: Sequence[tuple[int, bytes]]) -> StoredVectors | None:
    """``(label, stored vector)`` rows, in ascending label order, as one float32 matrix; None
    if they are not all of one dimension.

    Rows of one byte length are decoded together (a store holds the float32 vectors written
    before float16 ones): one by one, 100k rows would add ~0.3 s to a boot.
    """
    if not found:
        return StoredVectors(np.empty(0, dtype=np.int64), np.empty((0, 0), dtype=np.float32))
    labels = np.fromiter((r for r, _ in found), dtype=np.int64, count=len(found))
    lengths = np.fromiter((len(v) for _, v in found), dtype=np.int64, count=len(found))
    kinds = np.unique(lengths).tolist()
    if len(kinds) == 1:  # the usual store: its matrix as decoded, not copied again
        only = stacked_vectors([v for _, v in found])
        return None if only is None else StoredVectors(labels, only)
    data: NDArray[np.float32] | None = None
    for length in kinds:
        rows = np.flatnonzero(lengths == length)
        block = stacked_vectors([found[i][1] for i in rows.tolist()])
        if block is None or (data is not None and block.shape[1] != data.shape[1]):
            return None
        if data is None:
            data = np.empty((len(found), block.shape[1]), dtype=np.float32)
        data[rows] = block
    assert data is not None
    return StoredVectors(labels, data)


EXACT_CHUNK = 8192  # vectors copied out of the graph at a time by the exact fallback

# Filtered searches over at most this many labels scan the matrix exactly (20k 384-d rows
# take ~1.5 ms); larger sets go through the graph with a filter.
EXACT_SCAN_MAX = 20_000
# An approximate search (a write's neighbours) goes through the graph, unfiltered, once the set
# it looks in holds this many labels and this share of the index: below, the scan is as cheap
# (2k rows ~0.1 ms); a smaller share would need a filter or many more candidates fetched.
GRAPH_PROBE_MIN = 2_000
GRAPH_PROBE_SHARE = 0.5
MIRROR_FILL_CHUNK = 4096  # rows copied out of a loaded graph per hold of the lock


class Mirror:
    """Every indexed vector, unit length, one row per label; guarded by the index's lock."""

    def __init__(self, dim: int) -> None:
        self.matrix = np.empty((0, dim), dtype=np.float32)
        self.labels = np.empty(0, dtype=np.int64)
        self.row_of: dict[int, int] = {}
        self.ready = True  # False while a loaded graph is still being copied in
        # Rows are in increasing label order while labels arrive in increasing order (log
        # seqs do); a scan then finds rows by binary search instead of a dict per label.
        self.ascending = True
        self.top = -1  # the largest label stored
        self.generation = 0  # moves when a stored row is overwritten: scope copies are void

    def put(self, ids: Sequence[int], unit: NDArray[np.float32], *, keep: bool = False) -> None:
        """Store rows for ``ids``; a label already present is overwritten unless ``keep``."""
        rows: list[int] = []
        fresh: list[int] = []
        for i, label in enumerate(ids):
            row = self.row_of.get(label)
            if row is None:
                row = len(self.row_of)
                if label < self.top:
                    self.ascending = False
                self.top = max(self.top, label)
                self.row_of[label] = row
            elif keep:
                continue
            else:
                self.generation += 1
            rows.append(row)
            fresh.append(i)
        needed = len(self.row_of)
        if needed > self.matrix.shape[0]:
            capacity = max(needed, 2 * self.matrix.shape[0], MIN_CAPACITY)
            matrix = np.zeros((capacity, self.matrix.shape[1]), dtype=np.float32)
            matrix[: self.matrix.shape[0]] = self.matrix
            labels = np.full(capacity, -1, dtype=np.int64)
            labels[: self.labels.shape[0]] = self.labels
            self.matrix, self.labels = matrix, labels
        if rows:
            self.matrix[rows] = unit[fresh]
            self.labels[rows] = np.asarray(ids, dtype=np.int64)[fresh]

    def scan(
        self, query: NDArray[np.float32], k: int, labels: Sequence[int]
    ) -> list[tuple[int, float]]:
        """The ``k`` rows among ``labels`` most similar to the unit ``query``, best first."""
        rows = self.rows_of(labels)
        if rows.size == 0:
            return []
        return top_k(np.einsum("ij,j->i", self.matrix[rows], query), self.labels[rows], k)

    def scan_many(
        self,
        queries: NDArray[np.float32],
        k: int,
        labels: Sequence[int],
        at_least: float = -math.inf,
    ) -> list[list[tuple[int, float]]]:
        """``scan`` for several unit queries at once: one matrix product."""
        rows = self.rows_of(labels)
        return top_k_many(queries, self.matrix[rows], self.labels[rows], k, at_least)

    def rows_of(self, labels: Sequence[int] | AbstractSet[int]) -> NDArray[np.int64]:
        """The rows of those ``labels`` that are stored."""
        if not self.ascending:
            row_of = self.row_of
            return np.fromiter(
                (row for label in labels if (row := row_of.get(label)) is not None),
                dtype=np.int64,
            )
        stored = self.labels[: len(self.row_of)]
        wanted = np.fromiter(labels, dtype=np.int64, count=len(labels))
        rows = np.searchsorted(stored, wanted)
        found = rows < stored.size
        found[found] = stored[rows[found]] == wanted[found]
        return np.asarray(rows[found], dtype=np.int64)

    def adopt(self, labels: NDArray[np.int64], unit: NDArray[np.float32]) -> None:
        """Take ``unit`` (rows of ascending ``labels``) as the whole matrix, without a copy:
        the fill of an empty mirror at boot (at 1M rows each copy is a GiB)."""
        assert not self.row_of, "adopt fills an empty mirror"
        listed = labels.tolist()
        self.matrix, self.labels = unit, labels
        self.row_of = dict(zip(listed, range(len(listed)), strict=True))
        self.ascending = bool(np.all(labels[1:] > labels[:-1]))
        self.top = max(listed, default=-1)
        if not self.ascending:
            self.sort()

    def sort(self) -> None:
        """Put the rows in label order (after a fill that raced with adds)."""
        count = len(self.row_of)
        order = np.argsort(self.labels[:count], kind="stable")
        self.matrix[:count] = self.matrix[order]
        self.labels[:count] = self.labels[order]
        self.row_of = {int(label): row for row, label in enumerate(self.labels[:count].tolist())}
        self.ascending = True


def top_k(
    similarities: NDArray[np.float32], labels: NDArray[np.int64], k: int
) -> list[tuple[int, float]]:
    """The ``k`` best ``(label, similarity)``, best first, equal similarities by label: the
    order rows were scanned in never shows."""
    if labels.size == 0:
        return []
    if labels.size > k:
        top = np.argpartition(-similarities, k - 1)[:k]
        similarities, labels = similarities[top], labels[top]
    found = sorted(
        zip(similarities.tolist(), labels.tolist(), strict=True),
        key=lambda hit: (-hit[0], hit[1]),
    )
    return [(int(label), clamp(similarity)) for similarity, label in found]


def top_k_many(
    queries: NDArray[np.float32],
    candidates: NDArray[np.float32],
    labels: NDArray[np.int64],
    k: int,
    at_least: float = -math.inf,
) -> list[list[tuple[int, float]]]:
    """``top_k`` of each unit query against the rows of ``candidates``, keeping only
    similarities of ``at_least`` or more: one matrix product and one partition for all of
    them."""
    found_for: list[list[tuple[int, float]]] = [[] for _ in range(queries.shape[0])]
    if labels.size == 0 or k <= 0:
        return found_for
    # One (n, d) x (d, q) product: OpenBLAS took 2 to 3 times longer for (q, d) x (d, n).
    scores = (candidates @ queries.T).T
    asked = np.arange(queries.shape[0])
    if at_least > -math.inf:
        # Most rows of a write's near-duplicate check have no candidate that close: they skip
        # the partition and the sort.
        asked = np.flatnonzero(scores.max(axis=1) >= at_least)
        scores = scores[asked]
    for row, hits in zip(asked.tolist(), _best_of(scores, labels, k), strict=True):
        found_for[row] = [hit for hit in hits if hit[1] >= at_least]
    return found_for


def _best_of(
    scores: NDArray[np.float32], labels: NDArray[np.int64], k: int
) -> list[list[tuple[int, float]]]:
    """The ``k`` best ``(label, score)`` of each row of ``scores``, best first, equal scores by
    label."""
    if scores.shape[0] == 0:
        return []
    if labels.size > k:
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        scores = np.take_along_axis(scores, top, axis=1)
        found = labels[top]
    else:
        found = np.broadcast_to(labels, scores.shape)
    order = np.lexsort((found, -scores), axis=1)  # best first, equal scores by label
    best = np.take_along_axis(found, order, axis=1).tolist()
    similarity = np.take_along_axis(scores, order, axis=1).tolist()
    return [
        [(int(label), clamp(value)) for label, value in zip(row, values, strict=True)]
        for row, values in zip(best, similarity, strict=True)
    ]


def unit(data: NDArray[np.float32]) -> NDArray[np.float32]:
    """Each row scaled to length 1, as the index stores it."""
    norms = np.sqrt(np.einsum("ij,ij->i", data, data)).reshape(-1, 1)
    return np.asarray(data / norms, dtype=np.float32)


def unit_in_place(data: NDArray[np.float32]) -> NDArray[np.float32]:
    """``unit`` of a float32 matrix the caller owns, written over it (the same values)."""
    norms = np.sqrt(np.einsum("ij,ij->i", data, data)).reshape(-1, 1)
    np.divide(data, norms, out=data)
    return data


def clamp(similarity: float) -> float:
    return min(1.0, max(-1.0, similarity))


class MatrixFill:
    """How ``VectorIndex`` fills the matrix of a loaded graph. ``VectorIndex`` sets the state
    declared here (see its ``__init__`` for what ``_lock`` guards)."""

    dim: int
    _lock: threading.Lock
    _hnsw: hnswlib.Index
    _mirror: Mirror
    _deleted: JournaledSet

    def _fill_from(self, found: StoredVectors) -> bool:
        """Fill the matrix from ``found`` if it holds exactly the graph's live labels."""
        labels, data = found
        if labels.shape[0] == 0:
            return int(self._hnsw.element_count) == len(self._deleted)
        if data.ndim != 2 or data.shape != (labels.shape[0], self.dim):
            return False
        live = {int(label) for label in self._hnsw.get_ids_list()} - self._deleted
        listed = labels.tolist()
        if len(live) != len(listed) or live != set(listed):
            return False
        if self._mirror.row_of:
            self._mirror.put(listed, unit(data))
        else:  # ``found`` was decoded for this fill alone: its matrix becomes the mirror's
            self._mirror.adopt(labels, unit_in_place(np.ascontiguousarray(data, np.float32)))
        return True

    def _fill_mirror(self, hnsw: hnswlib.Index) -> None:
        """Copy a loaded graph's vectors into the matrix, a chunk per hold of the lock; rows
        added meanwhile are newer and kept. Stops if the graph was replaced (rebuild)."""
        labels = sorted(int(label) for label in hnsw.get_ids_list())
        for start in range(0, len(labels), MIRROR_FILL_CHUNK):
            with self._lock:
                if self._hnsw is not hnsw:
                    return
                # hnswlib refuses to copy out deleted labels; searches never return them.
                chunk = [
                    label
                    for label in labels[start : start + MIRROR_FILL_CHUNK]
                    if label not in self._deleted
                ]
                stored = np.asarray(hnsw.get_items(chunk, return_type="numpy"), np.float32)
                self._mirror.put(chunk, stored, keep=True)
        with self._lock:
            if self._hnsw is hnsw:
                if not self._mirror.ascending:
                    self._mirror.sort()
                self._mirror.ready = True
