"""The vector index: cosine nearest neighbours over version row ids, kept in an hnswlib graph.

Labels are the row ids of memory versions (integers in ``[0, 2**63)``); every version is
indexed, so a caller restricts a search to a container or to the versions valid at an instant
with the ``allowed`` filter rather than by removing rows.

The index is a projection: ``save(last_seq)`` writes the graph file and then a JSON sidecar
(``<path>.meta.json``) holding its dimension, element count, the last log seq applied and the
SHA-256 of the graph file. ``load`` checks the sidecar and the checksum before hnswlib reads a
byte, so a torn, truncated or foreign file yields ``None`` (rebuild from the log) and is never
trusted. Erasure cannot rely on ``remove``: hnswlib's ``mark_deleted`` keeps the vector bytes
in the graph and in every saved file, so an erase ends with ``rebuild`` and then ``save``.

Builds are deterministic: insertion is single-threaded with a fixed ``random_seed`` and the
capacity grows by a fixed rule, so the same items in the same order give a byte-identical file.

Beside the graph, the index keeps every vector (unit length) in one in-memory matrix, so a
search restricted to a small set of labels (one container's live versions, the versions valid
at an instant) is an exact scan of those rows: ~0.1 ms for 1,500 256-d rows, against ~1.2 ms
for hnswlib's filtered search, whose filter is a Python call per visited node. The scan is
also exact and deterministic, which approximate search is not. The matrix is filled as rows
are added; after ``load`` it is filled from the vectors the source projection stores, when they
are exactly the graph's (otherwise from the graph by a background thread: hnswlib copies out
~55k vectors/s, and until then filtered searches use the graph).

No BLAS call sits on a hot path here (norms and the exact fallback use elementwise numpy and
``einsum``, which run on the calling thread), so OpenBLAS's thread pool is never woken: two
BLAS threads made a 2k-vector query take ~12 ms on a 2-core machine.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import os
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import hnswlib
import msgspec
import numpy as np
from numpy.typing import NDArray

from ..fsync import fsync_path, write_durably
from .vector_scopes import Scopes

__all__ = ["VectorIndex"]

FORMAT = 1
MAX_LABEL = 2**63 - 1  # version row ids are SQLite integers: i64, never negative here
DEFAULT_M = 16
# Build-time candidate list. On 20k real 256-d embeddings (fast tier), recall@10 at ef 128 was
# 0.999 with 200 (3.7k inserts/s), 0.998 with 100 (7.4k/s), 0.997 with 64 (11.4k/s).
DEFAULT_EF_CONSTRUCTION = 64
DEFAULT_SEED = 100
# Candidates a search keeps (hnswlib's ef; at least 2k is used). On 100k 256-d vectors near a
# 32-d subspace, recall@10 was 0.90 at 64, 0.97 at 128 (0.48 ms a query), 0.99 at 200 (0.69 ms).
MIN_EF_SEARCH = 128
MIN_CAPACITY = 1024
ADD_CHUNK = 1024  # rows inserted per hold of the lock, so searches interleave with big adds
EXACT_CHUNK = 8192  # vectors copied out of the graph at a time by the exact fallback
_HASH_BLOCK = 1 << 20

# Filtered searches over at most this many labels scan the matrix exactly (20k 384-d rows
# take ~1.5 ms); larger sets go through the graph with a filter.
EXACT_SCAN_MAX = 20_000
MIRROR_FILL_CHUNK = 4096  # rows copied out of a loaded graph per hold of the lock
# Rows a background graph insert makes per hold of the lock (~5 ms): searches wait no longer.
GRAPH_CHUNK = 32

# One thread makes the queued graph inserts of every index, each index's in order: a single
# inserting thread is what keeps builds deterministic.
_GRAPH_WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vector-graph")

# A set of labels (exact scan when small enough) or a predicate (always the graph).
Allowed = AbstractSet[int] | Callable[[int], bool]


class StoredVectors(NamedTuple):
    """Vectors kept by the source an index is built from: ascending labels, one row each."""

    labels: NDArray[np.int64]
    data: NDArray[np.float32]


class _Mirror:
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
    return [(int(label), _clamp(similarity)) for similarity, label in found]


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
        [(int(label), _clamp(value)) for label, value in zip(row, values, strict=True)]
        for row, values in zip(best, similarity, strict=True)
    ]


def unit(data: NDArray[np.float32]) -> NDArray[np.float32]:
    """Each row scaled to length 1, as the index stores it."""
    norms = np.sqrt(np.einsum("ij,ij->i", data, data)).reshape(-1, 1)
    return np.asarray(data / norms, dtype=np.float32)


class _Sidecar(msgspec.Struct, frozen=True, kw_only=True):
    """What ``save`` records beside the graph file; ``load`` trusts the file only if it matches."""

    format: int
    space: str
    dim: int
    m: int
    ef_construction: int
    seed: int
    count: int  # elements in the graph, deleted ones included
    capacity: int
    deleted: list[int]  # labels marked deleted (the graph keeps them until a rebuild)
    last_seq: int
    size: int
    sha256: str


def sidecar_path(path: Path) -> Path:
    """Where the sidecar of the graph file at ``path`` lives."""
    return path.with_name(path.name + ".meta.json")


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(_HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _capacity_for(needed: int, current: int) -> int:
    """The capacity to grow to: a fixed rule, so equal inputs give equal files."""
    if needed <= current:
        return current
    return max(needed, 2 * current, MIN_CAPACITY)


class VectorIndex:
    """A cosine hnswlib index over integer labels, persisted at ``path``.

    Thread-safe: one lock guards the graph, so searches may run while another thread adds
    (large adds take the lock one chunk at a time). Writers (``add``, ``remove``, ``rebuild``,
    ``save``) are also serialised among themselves, so a rebuild never drops a concurrent add
    and a save never sees half an add; a build is deterministic only with a single writer.
    """

    def __init__(
        self,
        path: Path | str,
        dim: int,
        *,
        m: int = DEFAULT_M,
        ef_construction: int = DEFAULT_EF_CONSTRUCTION,
        seed: int = DEFAULT_SEED,
        ef_search: int = MIN_EF_SEARCH,
    ) -> None:
        if dim < 1:
            raise ValueError(f"dimension must be positive, not {dim}")
        self.path = Path(path)
        self.dim = dim
        self.last_seq = 0
        # Recall depends on the data as much as on ef: isotropic random 256-d vectors, the
        # worst case, reached only 0.42 at 100k even with ef 400 (bench/indexes.py).
        self.ef_search = ef_search
        self._m = m
        self._ef_construction = ef_construction
        self._seed = seed
        self._lock = threading.Lock()  # the graph: every read and every write of it
        self._writer = threading.Lock()  # one writer at a time; taken before ``_lock``
        self._hnsw = self._empty(MIN_CAPACITY)
        self._mirror = _Mirror(dim)
        self._scopes = Scopes(dim)
        self._deleted: set[int] = set()
        # Graph inserts not made yet, in the order they were asked for (see ``add``), and the
        # labels they bring that the graph does not hold yet.
        self._backlog: deque[tuple[NDArray[np.uint64], NDArray[np.float32]]] = deque()
        self._queued: Counter[int] = Counter()  # every label in the backlog (a re-add too)
        self._unindexed: set[int] = set()
        self._draining = False  # a job of the graph worker is queued or running for this index
        # Held by every change of the graph itself (backlog inserts, removes, scrubs, the swap
        # of a rebuild) and by a save while it writes the graph: taken after ``_writer``,
        # before ``_lock``.
        self._applying = threading.Lock()
        self._saving = threading.Lock()  # one save at a time, each whole, in the order asked

    # -- reading -------------------------------------------------------------------------------

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
    ) -> list[list[tuple[int, float]]]:
        """``search`` for each row of ``vectors`` within ``allowed``, similarities under
        ``at_least`` left out; a small set is scanned exactly for all of them in one matrix
        product."""
        queries = np.ascontiguousarray(vectors, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self.dim:
            raise ValueError(f"queries must have shape (n, {self.dim}), not {queries.shape}")
        norms = np.sqrt(np.einsum("ij,ij->i", queries, queries))
        with self._lock:
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

    def _scope_rows(
        self, scope: Hashable, allowed: AbstractSet[int]
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """The labels and unit vectors of ``allowed`` (live ones), kept as ``scope``; caller
        holds ``_lock``. The set difference is one C call: see ``search`` on live sets."""
        wanted = allowed - self._deleted if self._deleted else frozenset(allowed)
        return self._scopes.rows(scope, wanted, self._mirror)

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
        return [(int(label), _clamp(similarity)) for similarity, label in best]

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

    # -- writing -------------------------------------------------------------------------------

    def add(self, labels: Sequence[int], vectors: NDArray[np.floating]) -> None:
        """Insert ``vectors`` (shape ``(n, dim)``) under ``labels``.

        A label already present is replaced (and undeleted), so replaying a write is harmless.
        Capacity grows as needed. Inserts run on one thread with the index's fixed seed.
        """
        ids, data = self._validate(labels, vectors)
        with self._writer:
            with self._lock:
                # Once the matrix holds every vector, searches that need a vector at once find
                # it there, and the graph insert (~0.15 ms a row, the dearest step of a write)
                # is left to the graph worker: see ``_apply_backlog``.
                deferred = self._mirror.ready
                if deferred:
                    listed = ids.tolist()
                    row_of = self._mirror.row_of
                    self._unindexed.update(label for label in listed if label not in row_of)
                    self._mirror.put(listed, unit(data))
                    for start in range(0, len(ids), GRAPH_CHUNK):
                        end = start + GRAPH_CHUNK
                        self._backlog.append((ids[start:end], data[start:end]))
                    self._queued.update(listed)
                    self._deleted.difference_update(listed)
                    schedule, self._draining = not self._draining, True
            if not deferred:
                with self._applying:
                    self._insert(self._hnsw, self._mirror, ids, data, under_lock=True)
                with self._lock:
                    self._deleted.difference_update(ids.tolist())
            elif schedule:
                _GRAPH_WORKER.submit(self._apply_backlog)

    def _apply_backlog(self) -> None:
        """Make the queued graph inserts, a chunk per hold of the lock, in order."""
        while self._apply_one():
            time.sleep(0)  # let a search waiting for the lock have it between chunks

    def _drain(self) -> None:
        """Make every queued graph insert now (before the graph is saved or rewritten), letting
        a search waiting for the lock have it between chunks as ``_apply_backlog`` does: a save
        on the graph worker drains while searches run."""
        while self._apply_one():
            time.sleep(0)

    def _apply_one(self) -> bool:
        with self._applying, self._lock:
            if not self._backlog:
                self._draining = False
                return False
            ids, data = self._backlog.popleft()
            self._grow_and_add(self._hnsw, ids, data)
            listed = ids.tolist()
            self._unindexed.difference_update(listed)
            queued = self._queued
            for label in listed:
                if queued[label] > 1:
                    queued[label] -= 1
                else:
                    del queued[label]
            return True

    def remove(self, labels: Iterable[int]) -> None:
        """Hide ``labels`` from searches; unknown or already removed labels are ignored.

        This is ``mark_deleted``: the vectors stay in the graph and in saved files. To erase,
        call ``rebuild`` without them and then ``save``.
        """
        with self._writer:
            self._drain()
            with self._applying, self._lock:
                for label in labels:
                    if label in self._deleted:
                        continue
                    try:
                        self._hnsw.mark_deleted(label)
                    except RuntimeError:  # not in the index
                        continue
                    self._deleted.add(label)

    def scrub(self, labels: Iterable[int], seed: int = 0) -> None:
        """Erase ``labels``: overwrite each stored vector with noise, then hide it.

        hnswlib updates a label's vector in place (the old bytes are copied over), so after
        ``save`` neither memory nor file holds the erased vectors, at the cost of a few
        inserts instead of a rebuild of the whole graph. The noise is a seeded random unit
        vector: it carries nothing of the original.
        """
        rng = np.random.default_rng(seed)
        with self._writer:
            self._drain()
            with self._applying, self._lock:
                present = set(self._hnsw.get_ids_list())
                for label in labels:
                    if label not in present:
                        continue
                    noise = rng.standard_normal(self.dim).astype(np.float32).reshape(1, -1)
                    if label in self._deleted:
                        self._hnsw.unmark_deleted(label)
                    self._hnsw.add_items(noise, np.asarray([label]), num_threads=1)
                    self._mirror.put([label], unit(noise))
                    self._hnsw.mark_deleted(label)
                    self._deleted.add(label)

    def rebuild(self, items: Iterable[tuple[int, NDArray[np.floating]]]) -> None:
        """Replace the whole index by ``items`` (``(label, vector)`` pairs), from scratch.

        The new graph is built beside the old one, which keeps serving searches until the swap.
        After ``save``, the file holds nothing of the labels left out: this is how erasure
        reaches the vector index.
        """
        with self._writer:
            self._drain()  # what is queued belongs to the graph being replaced
            fresh = self._empty(MIN_CAPACITY)
            mirror = _Mirror(self.dim)
            batch_labels: list[int] = []
            batch_vectors: list[NDArray[np.floating]] = []
            for label, vector in items:
                batch_labels.append(label)
                batch_vectors.append(vector)
                if len(batch_labels) == ADD_CHUNK:
                    ids, data = self._validate(batch_labels, np.stack(batch_vectors))
                    self._insert(fresh, mirror, ids, data)
                    batch_labels, batch_vectors = [], []
            if batch_labels:
                ids, data = self._validate(batch_labels, np.stack(batch_vectors))
                self._insert(fresh, mirror, ids, data)
            with self._applying, self._lock:
                self._hnsw = fresh
                self._mirror = mirror
                self._scopes.clear()
                self._deleted = set()

    def save(self, last_seq: int) -> None:
        """Write the graph and its sidecar, recording that the log is applied up to ``last_seq``.

        The graph goes to a temporary file that is fsynced and renamed over ``path``, then the
        sidecar with the graph's checksum likewise; a crash between the two leaves a checksum
        mismatch, which ``load`` answers with ``None``.

        Searches and adds take none of its locks: only changes of the graph itself wait while
        its file is written (they hold ``_applying``), and the fsyncs and the checksum hold no
        lock but ``_saving``. (hnswlib's ``save_index`` holds the GIL while it writes: 226 ms at
        100k rows, a pause for every thread.) Saves run one at a time, in the order asked, so
        the last one asked (an erasure's) is the one on disk.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        with self._saving:
            # The file must hold everything added up to ``last_seq``: those rows were queued
            # before this save was asked for. Rows queued meanwhile come from later records.
            self._drain()
            with self._applying:
                with self._lock:
                    hnsw = self._hnsw
                    deleted = sorted(self._deleted)
                hnsw.save_index(str(tmp))  # the graph cannot change: reading it is safe
                count, capacity = int(hnsw.element_count), int(hnsw.get_max_elements())
            with tmp.open("rb+") as file:
                os.fsync(file.fileno())
            meta = _Sidecar(
                format=FORMAT,
                space="cosine",
                dim=self.dim,
                m=self._m,
                ef_construction=self._ef_construction,
                seed=self._seed,
                count=count,
                capacity=capacity,
                deleted=deleted,
                last_seq=last_seq,
                size=tmp.stat().st_size,
                sha256=_file_sha256(tmp),
            )
            os.replace(tmp, self.path)
            write_durably(sidecar_path(self.path), msgspec.json.encode(meta))
            fsync_path(self.path.parent)
            self.last_seq = last_seq

    def save_later(self, last_seq: int) -> Future[None]:
        """``save`` on the graph worker, after the graph inserts queued before it: the writer
        that asks goes on at once (a save at 100k memories took 0.1 to 0.3 s)."""
        return _GRAPH_WORKER.submit(self.save, last_seq)

    @classmethod
    def load(
        cls,
        path: Path | str,
        *,
        dim: int | None = None,
        ef_search: int = MIN_EF_SEARCH,
        stored: Callable[[int], StoredVectors | None] | None = None,
    ) -> VectorIndex | None:
        """The index saved at ``path``, or ``None`` if it is missing, damaged or not ours.

        ``None`` also when ``dim`` is given and differs (the embedder changed). The checksum is
        verified before hnswlib parses the file, since hnswlib trusts whatever it reads.

        The matrix is filled from ``stored(last_seq)`` when it returns exactly the labels the
        graph holds live: that takes a fraction of a second (hnswlib copies out ~70k vectors a
        second, holding the GIL), and gives the rows a fresh build makes (``unit`` of the
        vectors added; hnswlib's own normalisation can differ in the last bit). Otherwise a
        background thread copies the graph's vectors in, and until it has, filtered searches
        use the graph.
        """
        path = Path(path)
        try:
            meta = msgspec.json.decode(sidecar_path(path).read_bytes(), type=_Sidecar)
            if (
                meta.format != FORMAT
                or meta.space != "cosine"
                or meta.dim < 1
                or (dim is not None and meta.dim != dim)
                or path.stat().st_size != meta.size
                or _file_sha256(path) != meta.sha256
            ):
                return None
        except (OSError, msgspec.DecodeError):
            return None
        index = cls(
            path,
            meta.dim,
            m=meta.m,
            ef_construction=meta.ef_construction,
            seed=meta.seed,
            ef_search=ef_search,
        )
        hnsw = hnswlib.Index(space="cosine", dim=meta.dim)
        try:
            hnsw.load_index(str(path), max_elements=meta.capacity)
        except (RuntimeError, ValueError, MemoryError):
            return None
        if int(hnsw.element_count) != meta.count:
            return None
        index._hnsw = hnsw
        index._deleted = set(meta.deleted)
        index.last_seq = meta.last_seq
        found = None if stored is None else stored(meta.last_seq)
        if found is not None and index._fill_from(found):
            return index
        index._mirror.ready = False
        threading.Thread(
            target=index._fill_mirror, args=(hnsw,), name="vector-mirror", daemon=True
        ).start()
        return index

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
        self._mirror.put(listed, unit(data))
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

    # -- internals -----------------------------------------------------------------------------

    def _empty(self, capacity: int) -> hnswlib.Index:
        hnsw = hnswlib.Index(space="cosine", dim=self.dim)
        hnsw.init_index(
            max_elements=capacity,
            M=self._m,
            ef_construction=self._ef_construction,
            random_seed=self._seed,
        )
        hnsw.set_num_threads(1)
        return hnsw

    def _validate(
        self, labels: Sequence[int], vectors: NDArray[np.floating]
    ) -> tuple[NDArray[np.uint64], NDArray[np.float32]]:
        data = np.ascontiguousarray(vectors, dtype=np.float32)
        if data.ndim != 2 or data.shape[1] != self.dim:
            raise ValueError(f"vectors must have shape (n, {self.dim}), not {data.shape}")
        if len(labels) != data.shape[0]:
            raise ValueError(f"{len(labels)} labels for {data.shape[0]} vectors")
        if any(not 0 <= label <= MAX_LABEL for label in labels):
            raise ValueError("labels must be integers in [0, 2**63)")
        if len(set(labels)) != len(labels):
            raise ValueError("duplicate labels in one add")
        if not np.isfinite(data).all():
            raise ValueError("vectors hold NaN or infinity")
        if not np.einsum("ij,ij->i", data, data).all():
            raise ValueError("a zero vector has no direction and cannot be indexed by cosine")
        return np.asarray(labels, dtype=np.uint64), data

    def _insert(
        self,
        hnsw: hnswlib.Index,
        mirror: _Mirror,
        ids: NDArray[np.uint64],
        data: NDArray[np.float32],
        *,
        under_lock: bool = False,
    ) -> None:
        """Add rows to ``hnsw`` and ``mirror`` chunk by chunk; take ``_lock`` per chunk if they
        are the live ones."""
        units = unit(data)
        for start in range(0, len(ids), ADD_CHUNK):
            chunk_ids = ids[start : start + ADD_CHUNK]
            chunk = data[start : start + ADD_CHUNK]
            if under_lock:
                with self._lock:
                    self._grow_and_add(hnsw, chunk_ids, chunk)
                    mirror.put(chunk_ids.tolist(), units[start : start + ADD_CHUNK])
            else:
                self._grow_and_add(hnsw, chunk_ids, chunk)
                mirror.put(chunk_ids.tolist(), units[start : start + ADD_CHUNK])

    @staticmethod
    def _grow_and_add(
        hnsw: hnswlib.Index, ids: NDArray[np.uint64], data: NDArray[np.float32]
    ) -> None:
        capacity = int(hnsw.get_max_elements())
        grown = _capacity_for(int(hnsw.element_count) + len(ids), capacity)
        if grown != capacity:
            hnsw.resize_index(grown)
        hnsw.add_items(data, ids, num_threads=1)


def _clamp(similarity: float) -> float:
    return min(1.0, max(-1.0, similarity))


def _similarity(distance: float) -> float:
    """hnswlib's cosine distance is ``1 - cos``; float rounding can push it just past 0 or 2."""
    return _clamp(1.0 - distance)
