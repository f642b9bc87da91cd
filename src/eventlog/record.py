"""The envelope every event is stored in, and the framing that chains records together.

A stored value is ``sha256(record) || record`` where ``record`` is the envelope's JSON bytes.
The envelope carries ``prev``, the hex SHA-256 of the previous record's bytes (64 zeros for
seq 1), so a record's hash covers the whole history before it. This construction is
documented in ``docs/events.md`` so that an auditor can re-implement it in any language.
"""

from __future__ import annotations

import hashlib

import msgspec

from ..errors import CorruptRecord
from .events import Actor, AnyEvent

GENESIS = "0" * 64
DIGEST_SIZE = 32
ENVELOPE_VERSION = 1


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


def frame(record_bytes: bytes) -> bytes:
    """The stored value of a record: its digest followed by its bytes."""
    return record_digest(record_bytes) + record_bytes


def unframe(seq: int, value: bytes) -> tuple[bytes, bytes]:
    """Split and check a stored value; raise ``CorruptRecord`` when it does not add up."""
    if len(value) <= DIGEST_SIZE:
        raise CorruptRecord(seq, "value too short")
    digest, record_bytes = value[:DIGEST_SIZE], value[DIGEST_SIZE:]
    if record_digest(record_bytes) != digest:
        raise CorruptRecord(seq, "checksum mismatch")
    return digest, record_bytes


def seq_key(seq: int) -> bytes:
    """The LMDB key of a sequence number: u64 big-endian, so keys sort by seq."""
    return seq.to_bytes(8, "big")


def key_seq(key: bytes) -> int:
    return int.from_bytes(key, "big")
