"""The gate of each container: its lock, and the chain heads decided but not yet applied.

Decisions for one container are serialised by its lock, but the lock is not held while an
append syncs to disk: a writer decides, submits its append (the log keeps submission order),
records the chain heads it is making as *in flight* (``hold``), and releases the lock; the
next writer decides against the projections plus those in-flight heads. So concurrent writers
to one container share group commits, and two of them can still never extend the same version
of a chain. In-flight heads are dropped once their records are applied (``land``); operations
that read a chain's latest version under the lock first let them reach the projections
(``settle``).

On a log that other nodes append to, the lock is taken in this node's *turn* for the container
(``Recorder.turn``): no other node decides about it until the turn ends, and the turn begins
by applying what other nodes appended before it. Every write in flight holds the turn until it
lands, so the next decisions of this node, which see its heads in flight, never meet another
node's write they have not applied. Holding the lock is also *deciding* about the container
(``Recorder.deciding``): the appends made under it carry the seq the projections had reached
and the conditions of the container's in-flight appends they build on, which the log checks.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager

import msgspec
import numpy as np
import numpy.typing as npt

from ...eventlog import Appended, Hold
from ...eventlog.conditions import Condition
from ..record import Recorder


class Head(msgspec.Struct):
    """A chain head decided but not yet in the projections."""

    memory_id: str
    version_id: str
    version: int
    content_hash: str
    vector: npt.NDArray[np.float32] | None
    text: str = ""  # its words are compared only with a near duplicate's: split on demand
    # When its fact was true (UTC ns; None: when it is recorded): a write whose fact is older
    # never replaces it.
    observed_at: int | None = None
    is_static: bool = False  # its text again with ``isStatic`` makes a version, not a dedup


class Heads:
    """Chain heads decided but not yet in the projections (a batch's own and other writes'
    in flight), looked up by content hash and by similarity in one matrix product."""

    def __init__(self, heads: Sequence[Head]) -> None:
        self._by_memory: dict[str, Head] = {}
        self._by_hash: dict[str, Head] = {}
        self._rows: list[Head | None] = []
        self._row_of: dict[str, int] = {}
        self._matrix: npt.NDArray[np.float32] | None = None
        for head in heads:
            self.add(head)

    def __iter__(self) -> Iterator[Head]:
        return iter(list(self._by_memory.values()))

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._by_memory

    def get(self, memory_id: str) -> Head | None:
        return self._by_memory.get(memory_id)

    def with_hash(self, digest: str) -> Head | None:
        return self._by_hash.get(digest)

    def add(self, head: Head) -> None:
        self.remove(head.memory_id)
        self._by_memory[head.memory_id] = head
        self._by_hash[head.content_hash] = head
        if head.vector is None:
            return
        row = len(self._rows)
        if self._matrix is None:
            self._matrix = np.zeros((16, head.vector.shape[0]), dtype=np.float32)
        elif row == self._matrix.shape[0]:
            self._matrix = np.concatenate([self._matrix, np.zeros_like(self._matrix)])
        self._matrix[row] = head.vector
        self._rows.append(head)
        self._row_of[head.memory_id] = row

    def remove(self, memory_id: str) -> None:
        head = self._by_memory.pop(memory_id, None)
        if head is None:
            return
        if self._by_hash.get(head.content_hash) is head:
            del self._by_hash[head.content_hash]
        row = self._row_of.pop(memory_id, None)
        if row is not None:
            self._rows[row] = None
            assert self._matrix is not None
            self._matrix[row] = 0.0  # a zero row is never at or above a positive threshold

    def closest(
        self, vector: npt.NDArray[np.float32], threshold: float
    ) -> tuple[Head, float] | None:
        if self._matrix is None or not self._row_of:
            return None
        similarities = self._matrix[: len(self._rows)] @ vector
        row = int(np.argmax(similarities))
        head = self._rows[row]
        similarity = float(similarities[row])
        if head is None or similarity < threshold:
            return None
        return head, similarity


class Gate:
    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder
        self._locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)
        self._locks_guard = threading.Lock()
        # container -> memory_id -> (token of the write that made it, the in-flight head)
        self._in_flight: defaultdict[str, dict[str, tuple[object, Head]]] = defaultdict(dict)
        # container -> the appends of its in-flight writes, by token
        self._pending: defaultdict[str, dict[object, Future[Appended]]] = defaultdict(dict)
        # container -> the conditions its in-flight writes were decided under (shared logs)
        self._conditions: defaultdict[str, dict[object, Condition]] = defaultdict(dict)
        # Shared logs: the turn each container's lock is held in, and each in-flight write's
        self._turns: dict[str, Hold] = {}
        self._held: dict[object, Hold] = {}

    def lock(self, container_tag: str) -> AbstractContextManager[object]:
        """Hold the container's lock, deciding about it (on a shared log: see above)."""
        with self._locks_guard:
            lock = self._locks[container_tag]
        if not self._recorder.shared:
            return lock  # the embedded log: nothing else decides, nothing to carry
        return self._deciding(container_tag, lock)

    @contextmanager
    def _deciding(self, container_tag: str, lock: threading.Lock) -> Iterator[None]:
        # The turn first: waiting for it, this thread holds no lock a landing write needs.
        turn = self._recorder.turn(container_tag)
        try:
            with lock:  # the in-flight conditions are read under it: they change under it
                self._recorder.caught_up(turn.head)
                after = list(self._conditions[container_tag].values())
                self._turns[container_tag] = turn
                try:
                    with self._recorder.deciding(container_tag, after):
                        yield
                finally:
                    del self._turns[container_tag]
        finally:
            turn.release()

    def in_flight(self, container_tag: str) -> Heads:
        """With the container's lock held: the heads of its in-flight writes, as a new overlay
        the next decisions add their own heads to."""
        return Heads([head for _, head in self._in_flight[container_tag].values()])

    def hold(
        self,
        container_tag: str,
        token: object,
        future: Future[Appended],
        heads: Iterable[Head],
    ) -> None:
        """With the container's lock held: the write ``token`` was submitted as ``future``
        and makes ``heads``; they stay in flight until ``land``."""
        self._pending[container_tag][token] = future
        condition = self._recorder.condition()
        if condition is not None:
            self._conditions[container_tag][token] = condition
        turn = self._turns.get(container_tag)
        if turn is not None:  # the write keeps this node's turn until it lands
            turn.retain()
            self._held[token] = turn
        in_flight = self._in_flight[container_tag]
        for head in heads:
            in_flight[head.memory_id] = (token, head)

    def land(self, container_tag: str, token: object) -> None:
        """The write ``token`` reached the projections (or failed): drop its in-flight heads."""
        with self._locks_guard:
            lock = self._locks[container_tag]
        with lock:
            self._pending[container_tag].pop(token, None)
            self._conditions[container_tag].pop(token, None)
            in_flight = self._in_flight[container_tag]
            for memory_id, (owner, _) in list(in_flight.items()):
                if owner is token:
                    del in_flight[memory_id]
            turn = self._held.pop(token, None)
        if turn is not None:
            turn.release()  # outside the lock: the turn's last release unlocks it in the database

    def settle(self, container_tag: str) -> None:
        """With the container's lock held: let the in-flight writes reach the projections.

        Operations that read a chain's latest version and append under the lock (edit,
        forget, restore, erase, import) must see every write decided before them. The log
        keeps submission order, so applying up to the head covers every in-flight write; their
        heads are then known to the projections and are dropped from the overlay.
        """
        pending = self._pending[container_tag]
        if not pending:
            return
        seqs = [seq for future in list(pending.values()) for seq in _seqs_of(future)]
        if seqs:
            self._recorder.saw_up_to(self._recorder.apply(max(seqs)))
        pending.clear()
        self._conditions[container_tag].clear()
        self._in_flight[container_tag].clear()


def _seqs_of(future: Future[Appended]) -> list[int]:
    """The seqs an in-flight append got, once durable; none if it failed (its writer reports
    the failure)."""
    try:
        return future.result().seqs
    except Exception:
        return []
