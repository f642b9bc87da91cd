"""What the stored logs share: appends queued to one writer thread (group commit), reads in
checked chunks, and the head with its subscription. ``LmdbEventLog`` and ``PostgresEventLog``
differ only in how a batch is committed and a chunk is read."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from typing import Self

import msgspec

from ..errors import CorruptRecord, IdempotencyConflict, StorageError
from .chain import check_idempotency_key, checked_fingerprint
from .codec import RecordCodec
from .conditions import Condition
from .groupcommit import GroupCommitter, WriterStats
from .notify import HeadNotifier
from .port import UNSHARED, Appended, Draft, Head, Hold, RawRecord
from .record import StoredRecord

__all__ = ["AppendRequest", "FollowedHead", "GroupCommittedLog", "answered_without_append"]

READ_CHUNK = 256  # records read per query or transaction: none outlives a chunk


class AppendRequest(msgspec.Struct, frozen=True):
    """One caller's append, as it waits for the writer thread."""

    drafts: tuple[Draft, ...]
    idempotency_key: str | None
    fingerprint: bytes
    condition: Condition | None = None  # what it was decided under, for a shared log


def answered_without_append(
    request: AppendRequest, replay: Callable[[AppendRequest], Appended | None]
) -> Appended | BaseException | None:
    """The answer of a request that appends nothing: a retried key's first records
    (``replay`` finds them, or None), its conflict, or an empty append's; None if it appends."""
    try:
        replayed = replay(request)
    except IdempotencyConflict as exc:
        return exc
    if replayed is not None:
        return replayed
    return Appended(()) if not request.drafts else None


class FollowedHead:
    """The head of a log and the subscription to its moves; the log sets ``_head`` and
    publishes each new head to ``_notifier``."""

    _head: Head
    _notifier: HeadNotifier

    def head(self) -> Head:
        return self._head

    def current_head(self) -> Head:
        """The head: only this process appends to this log, so it is the store's."""
        return self._head

    def hold(self, key: str, *, within: bool = False) -> Hold:
        """Only this process appends: its turn, always."""
        return UNSHARED

    def wait_for(self, after_seq: int, timeout: float | None = None) -> int:
        return self._notifier.wait_for(after_seq, timeout)

    async def wait_for_async(self, after_seq: int, timeout: float | None = None) -> int:
        return await self._notifier.wait_for_async(after_seq, timeout)


class GroupCommittedLog(FollowedHead, ABC):
    """A log whose appends one writer thread commits in batches (``_writer``, set by the
    subclass with its ``_commit_batch``) and whose reads come in chunks (``_read_chunk``)."""

    _codec: RecordCodec
    _writer: GroupCommitter[AppendRequest, Appended]
    _failure: StorageError | None

    def append(
        self,
        drafts: Sequence[Draft],
        *,
        idempotency_key: str | None = None,
        fingerprint: bytes | None = None,
        condition: Condition | None = None,
    ) -> Appended:
        return self.submit(
            drafts, idempotency_key=idempotency_key, fingerprint=fingerprint, condition=condition
        ).result()

    async def append_async(
        self,
        drafts: Sequence[Draft],
        *,
        idempotency_key: str | None = None,
        fingerprint: bytes | None = None,
        condition: Condition | None = None,
    ) -> Appended:
        future = self.submit(
            drafts, idempotency_key=idempotency_key, fingerprint=fingerprint, condition=condition
        )
        return await asyncio.wrap_future(future)

    @property
    def writer_stats(self) -> WriterStats:
        return self._writer.stats

    @property
    def failure(self) -> StorageError | None:
        """The error that stopped writes, if any (cleared only by reopening)."""
        return self._failure

    def submit(
        self,
        drafts: Sequence[Draft],
        *,
        idempotency_key: str | None = None,
        fingerprint: bytes | None = None,
        condition: Condition | None = None,
    ) -> Future[Appended]:
        if self._failure is not None:
            raise self._failure
        check_idempotency_key(idempotency_key)
        checked = checked_fingerprint(drafts, self._codec)
        request = AppendRequest(tuple(drafts), idempotency_key, fingerprint or checked, condition)
        return self._writer.submit(request)

    def _commit_resolving(
        self, requests: Sequence[AppendRequest]
    ) -> Sequence[Appended | BaseException]:
        """``_commit_batch``, then each request's condition resolved: refused unless its
        append committed (the writer thread's callback)."""
        try:
            results = self._commit_batch(requests)
        except BaseException:
            for request in requests:
                if request.condition is not None:
                    request.condition.resolve(refused=True)
            raise
        for request, result in zip(requests, results, strict=True):
            if request.condition is not None:
                request.condition.resolve(refused=isinstance(result, BaseException))
        return results

    @abstractmethod
    def _commit_batch(self, requests: Sequence[AppendRequest]) -> list[Appended | BaseException]:
        """Commit a batch in one transaction: each request's answer, or its own error."""

    def read(self, from_seq: int = 1, limit: int | None = None) -> Iterator[StoredRecord]:
        """Records from ``from_seq`` on, read in chunks so no transaction outlives a chunk."""
        for stored, _ in self._read_checked(from_seq, limit):
            yield stored

    def read_raw(self, from_seq: int = 1, limit: int | None = None) -> Iterator[RawRecord]:
        """The stored bytes of records from ``from_seq`` on, checked as ``read`` checks them."""
        for stored, data in self._read_checked(from_seq, limit):
            yield RawRecord(stored.seq, stored.digest, data)

    def _read_checked(
        self, from_seq: int, limit: int | None
    ) -> Iterator[tuple[StoredRecord, bytes]]:
        seq = max(from_seq, 1)
        remaining = limit
        prev: str | None = None
        while remaining is None or remaining > 0:
            want = READ_CHUNK if remaining is None else min(READ_CHUNK, remaining)
            chunk = self._read_chunk(seq, want)
            for stored, data in chunk:
                if prev is not None and stored.record.prev != prev:
                    raise CorruptRecord(stored.seq, "does not chain to the previous record")
                prev = stored.digest
                yield stored, data
            if len(chunk) < want:
                return
            seq += len(chunk)
            if remaining is not None:
                remaining -= len(chunk)

    @abstractmethod
    def _read_chunk(self, seq: int, count: int) -> list[tuple[StoredRecord, bytes]]:
        """Up to ``count`` records from ``seq``, each with its stored bytes (unframed)."""

    @abstractmethod
    def close(self) -> None:
        """Finish the queued appends, then release the store."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
