"""The ``EventLog`` port: what everything above the log may rely on.

LMDB is the embedded implementation; an in-memory one serves tests. Nothing above this port
depends on LMDB specifics, so another backend (an append-only SQL table) can take its place.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from typing import Protocol

import msgspec

from .conditions import Condition
from .events import Actor, AnyEvent
from .record import GENESIS, StoredRecord


class Draft(msgspec.Struct, frozen=True):
    """An event waiting for its place in the log."""

    actor: Actor
    event: AnyEvent


class Head(msgspec.Struct, frozen=True):
    """The last record of the log: its seq, its hash and its time."""

    seq: int
    digest: str
    ts: int


EMPTY_HEAD = Head(0, GENESIS, 0)


class Appended(msgspec.Struct, frozen=True):
    """The answer to an append: the records it made, or found again for a retried key."""

    records: tuple[StoredRecord, ...]
    replayed: bool = False

    @property
    def seqs(self) -> list[int]:
        return [r.seq for r in self.records]


class RawRecord(msgspec.Struct, frozen=True):
    """A record as stored: its seq, the hash of its bytes and the bytes themselves."""

    seq: int
    digest: str
    data: bytes


class Hold(Protocol):
    """This node's turn to decide about one key (a container) of a log several nodes append
    to: until every holder has let go, no other node decides or appends about the key."""

    @property
    def head(self) -> int:
        """The log's head when the turn began: every other node's append about the key is at
        or below it, so a decision first applies the log through it."""
        ...

    def retain(self) -> None:
        """One more holder: an append decided in the turn, until it is applied."""
        ...

    def release(self) -> None:
        """A holder lets go; when the last one does, the turn ends."""
        ...


class Unshared:
    """The turn of a log only this process appends to: always this process's, nothing to do
    (its decisions are serialised by the container's lock in the process)."""

    head = 0

    def retain(self) -> None:
        pass

    def release(self) -> None:
        pass


UNSHARED = Unshared()


class EventLog(Protocol):
    """An append-only, hash-chained log of events."""

    def append(
        self,
        drafts: Sequence[Draft],
        *,
        idempotency_key: str | None = None,
        fingerprint: bytes | None = None,
        condition: Condition | None = None,
    ) -> Appended:
        """Append drafts atomically (contiguous seqs); answer once they are durable.

        A retry with the same ``idempotency_key`` and the same payload (``fingerprint``, by
        default a digest of the drafts) returns the original records; another payload raises
        ``IdempotencyConflict``. A log that several nodes append to refuses an append whose
        ``condition`` another node's append broke (``AppendConflict``, ``conditions.py``).
        """
        ...

    async def append_async(
        self,
        drafts: Sequence[Draft],
        *,
        idempotency_key: str | None = None,
        fingerprint: bytes | None = None,
        condition: Condition | None = None,
    ) -> Appended: ...

    def submit(
        self,
        drafts: Sequence[Draft],
        *,
        idempotency_key: str | None = None,
        fingerprint: bytes | None = None,
        condition: Condition | None = None,
    ) -> Future[Appended]:
        """Queue an append without waiting; the future resolves once it is durable.

        Appends are stored in the order they were submitted, so a caller may decide under a
        lock, submit, release the lock and only then wait (and share a commit with others).
        """
        ...

    def hold(self, key: str, *, within: bool = False) -> Hold:
        """Begin (or join) this node's turn to decide about ``key``, waiting while another
        node has it; the caller releases it. ``within``: the caller holds another turn, so
        it joins this node's turn even when that turn admits no more (waiting for it to end
        could wait on the caller itself). A log only this process appends to answers at once.
        """
        ...

    def read(self, from_seq: int = 1, limit: int | None = None) -> Iterator[StoredRecord]:
        """Records in seq order from ``from_seq``, checked as they are read."""
        ...

    def head(self) -> Head: ...

    def current_head(self) -> Head:
        """The head as the store holds it at this moment: a log other nodes append to asks
        its database, where ``head`` answers the last head this node heard of."""
        ...

    def wait_for(self, after_seq: int, timeout: float | None = None) -> int:
        """Block until the head passes ``after_seq`` (or timeout); return the head seq."""
        ...

    async def wait_for_async(self, after_seq: int, timeout: float | None = None) -> int: ...

    def close(self) -> None: ...


class RawEventLog(EventLog, Protocol):
    """A log that can also hand out the exact bytes it stored, for an export that an outsider
    re-hashes (a re-encoding would not be the bytes that were hashed once an event is upcast)."""

    def read_raw(self, from_seq: int = 1, limit: int | None = None) -> Iterator[RawRecord]:
        """Like ``read``, with the same checks, but yielding the stored bytes."""
        ...
