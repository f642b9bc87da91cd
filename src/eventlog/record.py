"""The envelope every event is stored in, and the framing that chains records together.

A record is the envelope's JSON bytes. The envelope carries ``prev``, the hex SHA-256 of the
previous record's bytes (64 zeros for seq 1), so a record's hash covers the whole history
before it. This construction is documented in ``docs/events.md`` so that an auditor can
re-implement it in any language; an export holds the records themselves.

A stored value is ``sha256(record)`` followed by the record compressed as one zstd frame, or
by the record itself where compressing does not make it smaller (and in every value stored
before compression): a JSON record opens with ``{``, a zstd frame with its magic number, so
the two never collide. A memory's record is mostly base64 of ciphertext, which zstd's entropy
coder takes back to about its bytes: over the first 20,000 records of a store of 100k facts,
1,488 bytes became 1,074 on average, and 99.5% of the values fit three to an LMDB page where
4.6% did (the log at 10k memories: 3,272 -> 1,737 bytes a memory), for about 13 µs a record
to compress and 4 µs to read.
"""

from __future__ import annotations

import hashlib
import threading

import msgspec
import zstandard

from ..errors import CorruptRecord
from .events import Actor, AnyEvent

GENESIS = "0" * 64
DIGEST_SIZE = 32
ENVELOPE_VERSION = 1
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# What a damaged frame may claim to hold before it is refused rather than allocated.
MAX_RECORD_SIZE = 1 << 30
_LEVEL = 3


class Record(msgspec.Struct, frozen=True, kw_only=True):
    """One log entry: position, time, who, chain link and the event body."""

    v: int = ENVELOPE_VERSION
    seq: int
    ts: int
    actor: Actor
    prev: str
    event: AnyEvent

    @property
    def kind(self) -> str:
        """The event's wire tag, e.g. ``memory.written``."""
        tag = type(self.event).__struct_config__.tag
        assert isinstance(tag, str)
        return tag


class StoredRecord(msgspec.Struct, frozen=True):
    """A decoded record with the hash of its stored bytes."""

    record: Record
    digest: str

    @property
    def seq(self) -> int:
        return self.record.seq


def record_digest(record_bytes: bytes) -> bytes:
    """The SHA-256 of a record's bytes: its checksum and its link in the chain."""
    return hashlib.sha256(record_bytes).digest()


class _Codecs(threading.local):
    """A compressor and a decompressor per thread: neither may be shared between threads."""

    def __init__(self) -> None:
        self.compressor = zstandard.ZstdCompressor(level=_LEVEL)
        self.decompressor = zstandard.ZstdDecompressor()


_codecs = _Codecs()


def frame(record_bytes: bytes) -> bytes:
    """The stored value of a record: its digest followed by its bytes, compressed when that
    makes them smaller."""
    packed = _codecs.compressor.compress(record_bytes)
    body = packed if len(packed) < len(record_bytes) else record_bytes
    return record_digest(record_bytes) + body


def unframe(seq: int, value: bytes) -> tuple[bytes, bytes]:
    """Split and check a stored value: its digest and the record's bytes (decompressed);
    raise ``CorruptRecord`` when it does not add up."""
    if len(value) <= DIGEST_SIZE:
        raise CorruptRecord(seq, "value too short")
    digest, record_bytes = value[:DIGEST_SIZE], value[DIGEST_SIZE:]
    if record_bytes.startswith(_ZSTD_MAGIC):
        record_bytes = _decompressed(seq, record_bytes)
    if record_digest(record_bytes) != digest:
        raise CorruptRecord(seq, "checksum mismatch")
    return digest, record_bytes


def _decompressed(seq: int, packed: bytes) -> bytes:
    try:
        size = zstandard.frame_content_size(packed)
        if not 0 <= size <= MAX_RECORD_SIZE:
            raise CorruptRecord(seq, "checksum mismatch")  # a size no record of ours has
        data: bytes = _codecs.decompressor.decompress(packed)
    except zstandard.ZstdError as exc:  # damaged: its bytes are not the frame written
        raise CorruptRecord(seq, "checksum mismatch") from exc
    return data


def seq_key(seq: int) -> bytes:
    """The LMDB key of a sequence number: u64 big-endian, so keys sort by seq."""
    return seq.to_bytes(8, "big")


def key_seq(key: bytes) -> int:
    return int.from_bytes(key, "big")
