"""The log export for outside audit: one header line, then one JSON line per record.

Each record line carries the record's stored JSON verbatim (``record``), the SHA-256 of those
bytes (``hash``) and, for people, the same fields decoded (``seq``, ``time``, ``kind``,
``actor``, ``prev``, ``event``). The decoded fields are byte slices of the stored JSON, never a
re-encoding, so sealed fields stay ciphertext exactly as stored. ``tools/verify_log.py``
checks an export with the standard library alone, ``verify_export`` with mnemolog; the format
is specified in docs/audit.md. A signed export (``sign_header``) carries in its header the
store key's signature over the range it holds (``signed_message``); an unsigned one is
byte for byte what it was before signing existed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime

import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..errors import CorruptRecord, InvalidInput
from ..eventlog.port import RawEventLog, RawRecord
from ..eventlog.record import GENESIS
from .signing import (
    ALG,
    PUBLIC_KEY_SIZE,
    SIGNATURE_SIZE,
    decode_b64,
    encode_public_key,
    fingerprint,
    pinned_fingerprint,
    sign,
    signature_holds,
    signed_message,
)

FORMAT = "mnemolog-log-export"
FORMAT_VERSION = 1
CHUNK_RECORDS = 256


class ExportSignature(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The store key's signature over the header's range (``signed_message``)."""

    alg: str
    public_key: str = msgspec.field(name="publicKey")
    records: int
    sig: str


class ExportHeader(msgspec.Struct, frozen=True, omit_defaults=True):
    """The first line: which records follow, the hash they continue from, the last hash, and
    (in a signed export only) the signature over all of these."""

    format: str
    version: int
    from_seq: int = msgspec.field(name="from")
    to_seq: int = msgspec.field(name="to")
    prev: str
    last: str
    signature: ExportSignature | None = None


def header_message(header: ExportHeader) -> bytes:
    """What the header's signature signs."""
    return signed_message(
        format=header.format,
        version=header.version,
        from_seq=header.from_seq,
        to_seq=header.to_seq,
        prev=header.prev,
        last=header.last,
    )


def sign_header(header: ExportHeader, key: Ed25519PrivateKey) -> ExportHeader:
    """The header with the store key's signature over its format, version, range and hashes."""
    signature = ExportSignature(
        alg=ALG,
        public_key=encode_public_key(key),
        records=header.to_seq - header.from_seq + 1,
        sig=sign(key, header_message(header)),
    )
    return msgspec.structs.replace(header, signature=signature)


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


# Reading an export back: the checks of tools/verify_log.py, for ``mnemolog verify-log FILE``.

_HEX64 = re.compile(r"[0-9a-f]{64}")


class _HeaderIn(msgspec.Struct, forbid_unknown_fields=True):
    format: str
    version: int
    from_seq: int = msgspec.field(name="from")
    to_seq: int = msgspec.field(name="to")
    prev: str
    last: str
    signature: ExportSignature | None = None


class _LineIn(_Line, forbid_unknown_fields=True):
    pass


class _EnvelopeIn(msgspec.Struct, forbid_unknown_fields=True):
    v: int
    seq: int
    ts: int
    actor: msgspec.Raw
    prev: str
    event: msgspec.Raw


class ExportReport(msgspec.Struct, kw_only=True):
    """What ``verify_export`` found; the fields of ``tools/verify_log.py --json``."""

    ok: bool = False
    records: int = 0
    from_seq: int | None = msgspec.field(default=None, name="from")
    to_seq: int | None = msgspec.field(default=None, name="to")
    prev: str | None = None
    last: str | None = None
    signed: bool = False
    public_key: str | None = msgspec.field(default=None, name="publicKey")
    fingerprint: str | None = None
    first_bad_line: int | None = None
    reason: str | None = None


class _Bad(Exception):
    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


def _check_header(header: _HeaderIn, pinned: str | None, report: ExportReport) -> None:
    if header.format != FORMAT:
        raise _Bad(1, f"not a {FORMAT} header")
    if header.version != FORMAT_VERSION:
        raise _Bad(1, f"unknown export version {header.version!r}")
    first, last = header.from_seq, header.to_seq
    if first < 1 or last < first - 1:
        raise _Bad(1, f"the header's range from {first} to {last} is not a range")
    for name, value in (("prev", header.prev), ("last", header.last)):
        if _HEX64.fullmatch(value) is None:
            raise _Bad(1, f"the header's {name} is not a SHA-256 in hex")
    if first == 1 and header.prev != GENESIS:
        raise _Bad(1, "an export from seq 1 must continue from 64 zeros")
    if last == first - 1 and header.last != header.prev:
        raise _Bad(1, "an empty export must end on the hash it continues from")
    signature = header.signature
    if signature is None:
        if pinned is not None:
            raise _Bad(1, f"the export is not signed, and it must be, by {pinned}")
        return
    public = decode_b64(signature.public_key, PUBLIC_KEY_SIZE)
    sig = decode_b64(signature.sig, SIGNATURE_SIZE)
    if signature.alg != ALG or public is None or sig is None:
        raise _Bad(1, "the signature is not an ed25519 signature with its public key")
    if signature.records != last - first + 1:
        raise _Bad(
            1,
            f"the signature counts {signature.records} records, the range holds {last - first + 1}",
        )
    message = signed_message(
        format=header.format,
        version=header.version,
        from_seq=first,
        to_seq=last,
        prev=header.prev,
        last=header.last,
    )
    if not signature_holds(public, message, sig):
        raise _Bad(1, "bad signature: the header is not what the key signed")
    found = fingerprint(public)
    if pinned is not None and found != pinned:
        raise _Bad(1, f"signed by another key: {found}, not {pinned}")
    report.signed, report.public_key, report.fingerprint = True, signature.public_key, found


def _check_line(text: bytes, number: int, seq: int, prev: str, ts: int) -> tuple[str, int]:
    """Check one record line against the state so far; return its (hash, ts)."""
    try:
        line = msgspec.json.decode(text, type=_LineIn)
    except msgspec.DecodeError as exc:
        raise _Bad(number, f"not a record line: {exc}") from None
    try:
        data = line.record.encode("utf-8")
    except UnicodeEncodeError:
        raise _Bad(number, "record is not valid Unicode") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != line.hash:
        raise _Bad(number, f"hash mismatch: the record hashes to {digest}, not {line.hash:.80}")
    try:
        record = msgspec.json.decode(data, type=_EnvelopeIn)
        kind = _kind.decode(record.event).type
    except msgspec.DecodeError as exc:
        raise _Bad(number, f"record is not a version 1 envelope: {exc}") from None
    if record.v != 1:
        raise _Bad(number, f"unknown envelope version {record.v}")
    view = {
        "seq": (line.seq, record.seq),
        "time": (line.time, rfc3339_ns(record.ts)),
        "kind": (line.kind, kind),
        "actor": (bytes(line.actor), bytes(record.actor)),
        "prev": (line.prev, record.prev),
        "event": (bytes(line.event), bytes(record.event)),
    }
    for name, (stated, actual) in view.items():
        if stated != actual:
            raise _Bad(number, f"the line's {name} is not its record's")
    if record.seq != seq:
        if record.seq < seq:
            raise _Bad(number, f"seq {record.seq} repeats or goes back (expected {seq})")
        raise _Bad(number, f"gap: expected seq {seq}, found {record.seq}")
    if record.prev != prev:
        raise _Bad(number, f"does not chain: prev is {record.prev}, the hash before is {prev}")
    if record.ts < ts:
        raise _Bad(number, "time goes backwards")
    return digest, record.ts


def verify_export(lines: Iterable[bytes], *, public_key: str | None = None) -> ExportReport:
    """Check an export line by line, its signature too; ``public_key`` (the base64 key or its
    fingerprint) requires one by that key. Stops at the first bad line."""
    report = ExportReport()
    pinned = None if public_key is None else pinned_fingerprint(public_key)
    header: _HeaderIn | None = None
    seq, prev, ts, number = 0, GENESIS, 0, 0
    try:
        for number, text in enumerate(lines, start=1):
            if header is None:
                try:
                    header = msgspec.json.decode(text, type=_HeaderIn)
                except msgspec.DecodeError as exc:
                    raise _Bad(1, f"not a {FORMAT} header: {exc}") from None
                _check_header(header, pinned, report)
                seq, prev = header.from_seq, header.prev
                report.from_seq, report.to_seq, report.prev = seq, header.to_seq, prev
                continue
            if seq > header.to_seq:
                raise _Bad(number, f"a record past the header's last seq {header.to_seq}")
            prev, ts = _check_line(text, number, seq, prev, ts)
            seq += 1
            report.records += 1
            report.last = prev
        if header is None:
            raise _Bad(1, "the export is empty (no header)")
        if seq <= header.to_seq:
            raise _Bad(
                number + 1, f"missing: ends before seq {seq}, the header says {header.to_seq}"
            )
        if prev != header.last:
            raise _Bad(number, f"the last hash is {prev}, the header says {header.last}")
    except _Bad as bad:
        report.first_bad_line, report.reason = bad.line, bad.reason
        return report
    report.ok, report.last = True, prev
    return report
