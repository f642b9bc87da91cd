"""Pure chaining: give drafts their seq, time and link to the previous record.

Both log implementations use this, so an in-memory log and the LMDB log produce the same
records for the same history.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import msgspec

from ..errors import InvalidInput
from .codec import RecordCodec
from .port import Draft, Head
from .record import Record, StoredRecord, frame, record_digest


class Chained(msgspec.Struct, frozen=True):
    """Records ready to store: their framed values and the head they lead to."""

    values: tuple[bytes, ...]
    records: tuple[StoredRecord, ...]
    head: Head


def chain(head: Head, drafts: Sequence[Draft], now_ns: int, codec: RecordCodec) -> Chained:
    """Chain drafts after ``head``. Time never decreases, even if the wall clock does."""
    ts = max(now_ns, head.ts)
    seq, prev = head.seq, head.digest
    values: list[bytes] = []
    records: list[StoredRecord] = []
    for draft in drafts:
        seq += 1
        record = Record(seq=seq, ts=ts, actor=draft.actor, prev=prev, event=draft.event)
        data = codec.encode(record)
        prev = record_digest(data).hex()
        values.append(frame(data))
        records.append(StoredRecord(record, prev))
    return Chained(tuple(values), tuple(records), Head(seq, prev, ts))


MAX_IDEMPOTENCY_KEY = 256


def check_idempotency_key(key: str | None) -> None:
    """Refuse keys that could not be stored (LMDB keys are at most 511 bytes)."""
    if key is None:
        return
    try:
        size = len(key.encode())
    except UnicodeEncodeError as exc:
        raise InvalidInput("the idempotency key is not valid UTF-8") from exc
    if not 0 < size <= MAX_IDEMPOTENCY_KEY:
        raise InvalidInput(f"an idempotency key has 1 to {MAX_IDEMPOTENCY_KEY} bytes")


def checked_fingerprint(drafts: Sequence[Draft], codec: RecordCodec) -> bytes:
    """Check that every draft can be stored and read back (else ``InvalidInput``), and return
    the default payload identity of the append, for idempotent retries."""
    h = hashlib.sha256()
    for draft in drafts:
        h.update(codec.check_draft(draft.actor, draft.event))
        h.update(b"\0")
    return h.digest()


class IdempotencyEntry(msgspec.Struct, frozen=True, array_like=True):
    """What an idempotency key answered: the payload's fingerprint and the seqs it got."""

    fingerprint: bytes
    first_seq: int
    count: int

    @property
    def seqs(self) -> range:
        return range(self.first_seq, self.first_seq + self.count)
