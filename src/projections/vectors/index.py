"""The vector index: cosine nearest neighbours over version row ids, kept in an hnswlib graph.

Labels are the row ids of memory versions (integers in ``[0, 2**63)``); every version is
indexed, so a caller restricts a search to a container or to the versions valid at an instant
with the ``allowed`` filter rather than by removing rows.

The index is a projection: ``save(last_seq)`` writes the graph file and its sidecar, and ``load``
trusts the file only if it matches them (``vector_files``). Erasure cannot rely on ``remove``:
hnswlib's ``mark_deleted`` keeps the vector bytes in the graph and in every saved file, so an
erase ends with ``rebuild`` and then ``save``.

Builds are deterministic: insertion is single-threaded with a fixed ``random_seed`` and the
capacity grows by a fixed rule, so the same items in the same order give a byte-identical file.

Beside the graph, the index keeps every vector (unit length) in one in-memory matrix, which a
search restricted to a small set of labels scans exactly (``vector_exact``); the searches are
in ``vector_search``. This module holds the graph and its writers: adds and the worker making
their graph inserts, removal, scrubbing, rebuilds, saves and loads.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import hnswlib
import numpy as np
from numpy.typing import NDArray

from ..journaled import JournaledSet
from . import files as vector_files
from .exact import MatrixFill, Mirror, StoredVectors, unit
from .files import MIN_CAPACITY, capacity_for
from .scopes import Scopes
from .search import Searching

__all__ = ["VectorIndex"]

MAX_LABEL = 2**63 - 1  # version row ids are SQLite integers: i64, never negative here
DEFAULT_M = 16
# Build-time candidate list. On 20k real 256-d embeddings (fast tier), recall@10 at ef 128 was
# 0.999 with 200 (3.7k inserts/s), 0.998 with 100 (7.4k/s), 0.997 with 64 (11.4k/s).
DEFAULT_EF_CONSTRUCTION = 64
DEFAULT_SEED = 100
# Candidates a search keeps (hnswlib's ef; at least 2k is used). On 100k 256-d vectors near a
# 32-d subspace, recall@10 was 0.90 at 64, 0.97 at 128 (0.48 ms a query), 0.99 at 200 (0.69 ms).
MIN_EF_SEARCH = 128
ADD_CHUNK = 1024  # rows inserted per hold of the lock, so searches interleave with big adds
# Rows a background graph insert makes per hold of the lock (~5 ms): searches wait no longer.
GRAPH_CHUNK = 32

# One thread makes the queued graph inserts of every index, each index's in order: a single
# inserting thread is what keeps builds deterministic.
_GRAPH_WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vector-graph")


class VectorIndex(Searching, MatrixFill):
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
        self._mirror = Mirror(dim)
        self._scopes = Scopes(dim)
        self._deleted = JournaledSet()
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

    # -- reading: ``Searching`` (``__len__``, ``search``, ``search_many``, ``unit_vectors``) ----

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
            mirror = Mirror(self.dim)
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
                self._deleted = JournaledSet()

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
            vector_files.publish(
                tmp,
                self.path,
                dim=self.dim,
                m=self._m,
                ef_construction=self._ef_construction,
                seed=self._seed,
                count=count,
                capacity=capacity,
                deleted=deleted,
                last_seq=last_seq,
            )
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
        meta = vector_files.verified_sidecar(path, dim)
        if meta is None:
            return None
        index = cls(
            path,
            meta.dim,
            m=meta.m,
            ef_construction=meta.ef_construction,
            seed=meta.seed,
            ef_search=ef_search,
        )
        hnsw = vector_files.open_graph(path, meta)
        if hnsw is None:
            return None
        index._hnsw = hnsw
        index._deleted = JournaledSet(meta.deleted)
        index.last_seq = meta.last_seq
        found = None if stored is None else stored(meta.last_seq)
        if found is not None and index._fill_from(found):
            return index
        index._mirror.ready = False
        threading.Thread(
            target=index._fill_mirror, args=(hnsw,), name="vector-mirror", daemon=True
        ).start()
        return index

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
        mirror: Mirror,
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
        grown = capacity_for(int(hnsw.element_count) + len(ids), capacity)
        if grown != capacity:
            hnsw.resize_index(grown)
        hnsw.add_items(data, ids, num_threads=1)
