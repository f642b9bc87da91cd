"""Searching the vector index: a small label set is scanned exactly in the matrix, anything
else is searched in the hnswlib graph (with a filter), and rows not in the graph yet are merged
in. Every search takes the index's ``_lock`` and no other.

No BLAS call sits on a hot path here (norms and the exact fallback use elementwise numpy and
``einsum``, which run on the calling thread), so OpenBLAS's thread pool is never woken: two
BLAS threads made a 2k-vector query take ~12 ms on a 2-core machine.
"""

from __future__ import annotations

import heapq
import math
import threading
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from collections.abc import Set as AbstractSet

import hnswlib
import numpy as np
from numpy.typing import NDArray

from ..journaled import JournaledSet
from .exact import (
    EXACT_CHUNK,
    EXACT_SCAN_MAX,
    GRAPH_PROBE_MIN,
    GRAPH_PROBE_SHARE,
    Mirror,
    clamp,
    top_k,
    top_k_many,
)
from .scopes import Scopes

__all__ = ["Allowed", "Searching"]

# A set of labels (exact scan when small enough) or a predicate (always the graph).
Allowed = AbstractSet[int] | Callable[[int], bool]


class Searching:
    """The reading methods of ``VectorIndex``, which sets (in ``__init__``) and writes the state
    declared here; see ``VectorIndex`` for what each lock guards."""

    dim: int
    ef_search: int
    _lock: threading.Lock
    _hnsw: hnswlib.Index
    _mirror: Mirror
    _scopes: Scopes
    _deleted: JournaledSet
    _queued: Counter[int]
    _unindexed: set[int]

    def __len__(self) -> int:
        """Live elements: those added and not removed."""
        with self._lock:
            return self._live()

    def _live(self) -> int:
        """Labels added and not removed, graph and backlog; caller holds ``_lock``."""
        return int(self._hnsw.element_count) + len(self._unindexed) - len(self._deleted)

    def search(
        self,
        vector: NDArray[np.floating] | Sequence[float],
        k: int,
        *,
        allowed: Allowed | None = None,
        scope: Hashable | None = None,
    ) -> list[tuple[int, float]]:
        """The ``k`` nearest live labels as ``(label, cosine similarity)``, best first.

        ``k`` larger than the number of elements is clamped, never an error. ``allowed``
        restricts the result to the labels it holds (a set) or accepts (a predicate); when
        fewer than ``k`` labels pass it, all of them are returned (found by an exact scan). A
        set of at most ``EXACT_SCAN_MAX`` labels is scanned exactly. A zero query vector has
        no direction and matches nothing. ``scope`` names a set ``allowed`` recurs as (a
        container's live versions): its rows are then kept together between searches.
        """
        query = np.ascontiguousarray(vector, dtype=np.float32).reshape(-1)
        if query.shape != (self.dim,):
            raise ValueError(f"query has {query.size} dimensions, the index {self.dim}")
        if not np.isfinite(query).all():
            raise ValueError("query vector holds NaN or infinity")
        if k <= 0 or not np.any(query):
            return []
        with self._lock:
            want = min(k, self._live())
            if want == 0:
                return []
            if isinstance(allowed, AbstractSet):
                if self._mirror.ready and len(allowed) <= EXACT_SCAN_MAX:
                    unit = query / np.sqrt(np.einsum("i,i->", query, query))
                    if scope is not None:
                        labels, rows = self._scope_rows(scope, allowed)
                        return top_k(np.einsum("ij,j->i", rows, unit), labels, want)
                    # A copy made in one C call: callers may pass a live set that another
                    # thread extends, and iterating it in Python could see it change size.
                    listed = list(allowed - self._deleted if self._deleted else allowed)
                    return self._mirror.scan(unit, want, listed)
                allowed = allowed.__contains__
            # ef is the size of the candidate list; hnswlib needs ef >= k, and recall needs slack.
            self._hnsw.set_ef(max(self.ef_search, 2 * want))
            try:
                labels, distances = self._hnsw.knn_query(
                    query, k=want, num_threads=1, filter=allowed
                )
            except RuntimeError:
                # hnswlib raises when it finds fewer than ``k`` results: the filter admits
                # fewer than ``k`` live labels, or deletions cut the graph. Scan exactly.
                return self._exact(query, want, allowed)
            found = [
                (int(label), _similarity(distance))
                for label, distance in zip(labels[0].tolist(), distances[0].tolist(), strict=True)
            ]
            if self._queued:  # added, not in the graph yet: scanned exactly, then merged
                pending = [
                    label
                    for label in self._queued
                    if label not in self._deleted and (allowed is None or allowed(label))
                ]
                unit = query / np.sqrt(np.einsum("i,i->", query, query))
                found = sorted(
                    [
                        *(hit for hit in found if hit[0] not in self._queued),
                        *self._mirror.scan(unit, want, pending),
                    ],
                    key=lambda hit: (-hit[1], hit[0]),
                )[:want]
        return found

    def search_many(
        self,
        vectors: NDArray[np.floating],
        k: int,
        *,
        allowed: AbstractSet[int],
        scope: Hashable | None = None,
        at_least: float = -math.inf,
        approximate: bool = False,
    ) -> list[list[tuple[int, float]]]:
        """``search`` for each row of ``vectors`` within ``allowed``, similarities under
        ``at_least`` left out; a small set is scanned exactly for all of them in one matrix
        product.

        With ``approximate``, a set that is most of the index is found through the graph
        instead, unfiltered (``_graph_many``): a cost that grows with the log of the index, not
        with the set, for callers that can miss a rare neighbour (hnswlib's recall at this ef
        on memories' vectors: 0.998 of the true 16 nearest)."""
        queries = np.ascontiguousarray(vectors, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self.dim:
            raise ValueError(f"queries must have shape (n, {self.dim}), not {queries.shape}")
        norms = np.sqrt(np.einsum("ij,ij->i", queries, queries))
        with self._lock:
            if (
                approximate
                and k > 0
                and self._mirror.ready
                and len(allowed) >= GRAPH_PROBE_MIN
                and len(allowed) >= GRAPH_PROBE_SHARE * self._live()
                and np.isfinite(queries).all()
                and norms.all()
            ):
                found = self._graph_many(queries / norms.reshape(-1, 1), k, allowed, at_least)
                if found is not None:
                    return found
            if (
                k > 0
                and self._mirror.ready
                and len(allowed) <= EXACT_SCAN_MAX
                and np.isfinite(queries).all()
                and norms.all()
            ):
                units = queries / norms.reshape(-1, 1)
                if scope is not None:
                    labels, rows = self._scope_rows(scope, allowed)
                    return top_k_many(units, rows, labels, k, at_least)
                listed = list(allowed - self._deleted if self._deleted else allowed)
                return self._mirror.scan_many(units, k, listed, at_least)
        return [
            [
                hit
                for hit in self.search(query, k, allowed=allowed, scope=scope)
                if hit[1] >= at_least
            ]
            for query in queries
        ]

    def _graph_many(
        self,
        units: NDArray[np.float32],
        k: int,
        allowed: AbstractSet[int],
        at_least: float,
    ) -> list[list[tuple[int, float]]] | None:
        """The ``k`` nearest of ``allowed`` to each unit query as the graph finds them,
        unfiltered (the set is most of the index, so a few more than ``k`` suffice), with the
        labels not in the graph yet scanned beside them; None when the graph does not give
        ``k`` of the set, for the caller's exact path. Similarities are computed from the
        matrix as the exact scan computes them (to the last bits of float rounding), so the
        two paths differ in which neighbours they find, not in how they rank them. Caller holds
        ``_lock``."""
        want, live = min(k, len(allowed)), self._live()
        if live <= 0:  # the set names labels the index does not hold (yet)
            return None
        # Twice what the set's share of the index would hold among the nearest: room for
        # others' labels between them.
        share = min(1.0, len(allowed) / live)
        fetch = min(int(self._hnsw.element_count) - len(self._deleted), math.ceil(2 * want / share))
        if fetch < want:
            return None
        self._hnsw.set_ef(max(self.ef_search, fetch))
        try:
            labels, _ = self._hnsw.knn_query(units, k=fetch, num_threads=1)
        except RuntimeError:  # fewer than ``fetch`` reachable: deletions cut the graph
            return None
        pending = [
            label for label in self._queued if label in allowed and label not in self._deleted
        ]
        found = []
        for unit, row in zip(units, labels.tolist(), strict=True):
            near = [label for label in row if label in allowed]
            if len(near) < want:
                return None
            rows = self._mirror.rows_of([*dict.fromkeys(near + pending)])
            matrix, listed = self._mirror.matrix[rows], self._mirror.labels[rows]
            found += top_k_many(unit.reshape(1, -1), matrix, listed, want, at_least)
        return found

    def _scope_rows(
        self, scope: Hashable, allowed: AbstractSet[int]
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """The labels and unit vectors of ``allowed`` (live ones), kept as ``scope``; caller
        holds ``_lock``. The set difference is one C call: see ``search`` on live sets."""
        return self._scopes.rows(scope, allowed, self._deleted, self._mirror)

    def _exact(
        self, query: NDArray[np.float32], k: int, allowed: Callable[[int], bool] | None
    ) -> list[tuple[int, float]]:
        """Brute force over the live labels ``allowed`` admits; caller holds ``_lock``."""
        candidates = [
            label
            for label in {*self._hnsw.get_ids_list(), *self._unindexed}
            if label not in self._deleted and (allowed is None or allowed(label))
        ]
        # Cosine space: hnswlib stores unit vectors, so a dot product with the unit query is cos.
        unit = query / np.sqrt(np.einsum("i,i->", query, query))
        if self._mirror.ready:
            return self._mirror.scan(unit, k, candidates)
        best: list[tuple[float, int]] = []
        for start in range(0, len(candidates), EXACT_CHUNK):  # bounded memory for big scans
            chunk = candidates[start : start + EXACT_CHUNK]
            stored = np.asarray(self._hnsw.get_items(chunk, return_type="numpy"), np.float32)
            similarities = np.einsum("ij,j->i", stored, unit).tolist()
            best = heapq.nlargest(k, [*best, *zip(similarities, chunk, strict=True)])
        best.sort(key=lambda hit: (-hit[0], hit[1]))
        return [(int(label), clamp(similarity)) for similarity, label in best]

    def unit_vectors(self, labels: Sequence[int]) -> NDArray[np.float32] | None:
        """The stored unit vectors of ``labels`` as rows (zero for a label not stored), or
        ``None`` while a loaded graph is still being copied into the matrix."""
        out = np.zeros((len(labels), self.dim), dtype=np.float32)
        with self._lock:
            mirror = self._mirror
            if not mirror.ready:
                return None
            at = [
                (n, row)
                for n, label in enumerate(labels)
                if (row := mirror.row_of.get(label)) is not None
            ]
            if at:
                places, rows = zip(*at, strict=True)
                out[list(places)] = mirror.matrix[list(rows)]
        return out


def _similarity(distance: float) -> float:
    """hnswlib's cosine distance is ``1 - cos``; float rounding can push it just past 0 or 2."""
    return clamp(1.0 - distance)
