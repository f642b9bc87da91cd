"""The log export for outside audit: one header line, then one JSON line per record.

Each record line carries the record's stored JSON verbatim (``record``), the SHA-256 of those
bytes (``hash``) and, for people, the same fields decoded (``seq``, ``time``, ``kind``,
``actor``, ``prev``, ``event``). The decoded fields are byte slices of the stored JSON, never a
re-encoding, so sealed fields stay ciphertext exactly as stored. ``tools/verify_log.py``
checks an export with the standard library alone; the format is specified in docs/audit.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import msgspec

from ..errors import CorruptRecord, InvalidInput
from ..eventlog.port import RawEventLog, RawRecord
from ..eventlog.record import GENESIS

FORMAT = "mnemolog-log-export"
FORMAT_VERSION = 1
CHUNK_RECORDS = 256


class ExportHeader(msgspec.Struct, frozen=True):
    """The first line: which records follow, the hash they continue from, the last hash."""

    format: str
    version: int
    from_seq: int = msgspec.field(name="from")
    to_seq: int = msgspec.field(name="to")
    prev: str
    last: str


class _Kind(msgspec.Struct):
    type: str


class _Envelope(msgspec.Struct):
    seq: int
    ts: int
    actor: msgspec.Raw
    prev: str
    event: msgspec.Raw


class _Line(msgspec.Struct):
    seq: int
    time: str
    kind: str
    actor: msgspec.Raw
    prev: str
    hash: str
    event: msgspec.Raw
    record: str


_envelope = msgspec.json.Decoder(_Envelope)
_kind = msgspec.json.Decoder(_Kind)
_encoder = msgspec.json.Encoder()


def rfc3339_ns(ts: int) -> str:
    """UTC nanoseconds as RFC 3339 with all nine fractional digits and ``Z``."""
    seconds, nanos = divmod(ts, 1_000_000_000)
    m = datetime.fromtimestamp(seconds, tz=UTC)
    return (
        f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}"
        f".{nanos:09d}Z"
    )


def export_line(raw: RawRecord) -> bytes:
    """One record as an export line, newline included."""
    try:
        envelope = _envelope.decode(raw.data)
        kind = _kind.decode(envelope.event).type
        record = raw.data.decode("utf-8")
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
        raise CorruptRecord(raw.seq, f"undecodable record: {exc}") from exc
    line = _Line(
        seq=envelope.seq,
        time=rfc3339_ns(envelope.ts),
        kind=kind,
        actor=envelope.actor,
        prev=envelope.prev,
        hash=raw.digest,
        event=envelope.event,
        record=record,
    )
    return _encoder.encode(line) + b"\n"


def _one(log: RawEventLog, seq: int) -> RawRecord:
    for raw in log.read_raw(seq, limit=1):
        return raw
    raise CorruptRecord(seq, "missing below the head")


def export_header(log: RawEventLog, from_seq: int | None, to_seq: int | None) -> ExportHeader:
    """Resolve a range against the log (``to`` defaults to the head now) and describe it.

    Raises ``InvalidInput`` for a range the log does not hold, so the caller answers 4xx
    before any line is written.
    """
    head = log.head().seq
    first = 1 if from_seq is None else from_seq
    last = head if to_seq is None else to_seq
    if first < 1:
        raise InvalidInput(f"from must be at least 1, not {first}")
    if last > head:
        raise InvalidInput(f"to ({last}) is past the head of the log ({head})")
    if head == 0 and from_seq is None and to_seq is None:
        return ExportHeader(FORMAT, FORMAT_VERSION, 1, 0, GENESIS, GENESIS)
    if first > last:
        raise InvalidInput(f"from ({first}) is after to ({last})")
    prev = msgspec.json.decode(_one(log, first).data, type=_Envelope).prev
    return ExportHeader(FORMAT, FORMAT_VERSION, first, last, prev, _one(log, last).digest)


def header_line(header: ExportHeader) -> bytes:
    return _encoder.encode(header) + b"\n"


def export_chunk(log: RawEventLog, seq: int, to_seq: int, size: int = CHUNK_RECORDS) -> bytes:
    """The lines of records ``seq`` .. ``min(seq + size - 1, to_seq)``, read in one go so a
    slow consumer holds no LMDB transaction while it writes them out."""
    count = min(size, to_seq - seq + 1)
    return b"".join(export_line(raw) for raw in log.read_raw(seq, limit=count))


def export_lines(
    log: RawEventLog, header: ExportHeader, size: int = CHUNK_RECORDS
) -> Iterator[bytes]:
    """The whole export, header first, as chunks of lines."""
    yield header_line(header)
    for seq in range(header.from_seq, header.to_seq + 1, size):
        yield export_chunk(log, seq, header.to_seq, size)
