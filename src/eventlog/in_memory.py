"""An in-memory ``EventLog`` with the same semantics as the LMDB one, for tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future

from ..errors import IdempotencyConflict, LogClosed
from .chain import IdempotencyEntry, chain, check_idempotency_key, checked_fingerprint
from .codec import RecordCodec, decode_value
from .committed import FollowedHead
from .conditions import Condition
from .notify import HeadNotifier
from .port import EMPTY_HEAD, Appended, Draft
from .record import StoredRecord


class InMemoryEventLog(FollowedHead):
    """Keeps framed records in a list; every read decodes and checks them like LMDB does."""

    def __init__(self, codec: RecordCodec | None = None) -> None:
        self._codec = codec or RecordCodec()
        self._values: list[bytes] = []
        self._idempotency: dict[str, IdempotencyEntry] = {}
        self._head = EMPTY_HEAD
        self._lock = threading.Lock()
        self._notifier = HeadNotifier()
        self._closed = False

    def append(
        self,
        drafts: Sequence[Draft],
        *,
        idempotency_key: str | None = None,
        fingerprint: bytes | None = None,
        condition: Condition | None = None,
    ) -> Appended:
        check_idempotency_key(idempotency_key)
        checked = checked_fingerprint(drafts, self._codec)
        print_ = fingerprint or checked
        if condition is not None:  # one writer: nothing else can break it
            condition.resolve(refused=False)
        with self._lock:
            if self._closed:
                raise LogClosed("the log is closed")
            if idempotency_key is not None and idempotency_key in self._idempotency:
                entry = self._idempotency[idempotency_key]
                if entry.fingerprint != print_:
                    raise IdempotencyConflict(
                        f"idempotency key {idempotency_key!r} was used with another payload"
                    )
                records = tuple(self._decode(s) for s in entry.seqs)
                return Appended(records, replayed=True)
            if not drafts:
                return Appended(())
            chained = chain(self._head, drafts, time.time_ns(), self._codec)
            self._values.extend(chained.values)
            if idempotency_key is not None:
                first = chained.records[0].seq
                self._idempotency[idempotency_key] = IdempotencyEntry(print_, first, len(drafts))
            self._head = chained.head
        self._notifier.publish(chained.head.seq)
        return Appended(chained.records)

    async def append_async(
        self,
        drafts: Sequence[Draft],
        *,
        idempotency_key: str | None = None,
        fingerprint: bytes | None = None,
        condition: Condition | None = None,
    ) -> Appended:
        return self.append(
            drafts, idempotency_key=idempotency_key, fingerprint=fingerprint, condition=condition
        )

    def submit(
        self,
        drafts: Sequence[Draft],
        *,
        idempotency_key: str | None = None,
        fingerprint: bytes | None = None,
        condition: Condition | None = None,
    ) -> Future[Appended]:
        future: Future[Appended] = Future()
        try:
            appended = self.append(
                drafts,
                idempotency_key=idempotency_key,
                fingerprint=fingerprint,
                condition=condition,
            )
        except Exception as exc:
            future.set_exception(exc)
        else:
            future.set_result(appended)
        return future

    def read(self, from_seq: int = 1, limit: int | None = None) -> Iterator[StoredRecord]:
        seq = max(from_seq, 1)
        count = 0
        while limit is None or count < limit:
            with self._lock:
                if seq > len(self._values):
                    return
            yield self._decode(seq)
            seq += 1
            count += 1

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._notifier.close()

    def _decode(self, seq: int) -> StoredRecord:
        return decode_value(seq, self._values[seq - 1], self._codec)
