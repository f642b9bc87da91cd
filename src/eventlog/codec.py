"""Encoding and decoding of records and event bodies (JSON via msgspec).

Decoders are built once. Decoding reads a small header first (``type``, ``schema``); only an
event stored under an older schema takes the slow path through the upcaster chain.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import msgspec

from ..errors import CorruptRecord
from .events import EVENT_TYPES, Actor, AnyEvent, current_schema, event_tag
from .record import Record, StoredRecord, unframe
from .upcasting import MissingUpcaster, Upcasters

E = TypeVar("E")


class _Header(msgspec.Struct):
    type: str
    schema: int = 1


class _RawRecord(msgspec.Struct, kw_only=True):
    v: int
    seq: int
    ts: int
    actor: Actor
    prev: str
    event: msgspec.Raw


class EventDecoder(Generic[E]):
    """Decodes event bodies of one tagged union, upcasting old schemas on the way."""

    def __init__(self, union: Any, upcasters: Upcasters) -> None:
        self._union = union
        self._upcasters = upcasters
        self._decoder: msgspec.json.Decoder[E] = msgspec.json.Decoder(union)
        self._header = msgspec.json.Decoder(_Header)

    def decode(self, data: bytes | msgspec.Raw) -> E:
        header = self._header.decode(data)
        if not self._upcasters.needs_upcast(header.type, header.schema):
            return self._decoder.decode(data)
        mapping = msgspec.json.decode(data, type=dict[str, Any])
        upcast: E = msgspec.convert(self._upcasters.upcast(mapping), type=self._union)
        return upcast


def default_upcasters() -> Upcasters:
    """The upcaster chain of mnemolog's own events (no breaking change has been made yet)."""
    return Upcasters({event_tag(t): current_schema(t) for t in EVENT_TYPES})


class RecordCodec:
    """Turns records into stored bytes and back."""

    def __init__(self, upcasters: Upcasters | None = None) -> None:
        self._encoder = msgspec.json.Encoder()
        self._raw = msgspec.json.Decoder(_RawRecord)
        self._events: EventDecoder[AnyEvent] = EventDecoder(
            AnyEvent, upcasters or default_upcasters()
        )

    def encode(self, record: Record) -> bytes:
        return self._encoder.encode(record)

    def encode_event(self, event: AnyEvent) -> bytes:
        return self._encoder.encode(event)

    def decode(self, seq: int, data: bytes) -> Record:
        """Decode a record's bytes; any failure is a ``CorruptRecord`` at ``seq``."""
        try:
            raw = self._raw.decode(data)
            event = self._events.decode(raw.event)
        except (msgspec.DecodeError, msgspec.ValidationError, MissingUpcaster) as exc:
            raise CorruptRecord(seq, f"undecodable record: {exc}") from exc
        return Record(v=raw.v, seq=raw.seq, ts=raw.ts, actor=raw.actor, prev=raw.prev, event=event)


def decode_value(seq: int, value: bytes, codec: RecordCodec) -> StoredRecord:
    """Check and decode the stored value found under key ``seq``."""
    digest, data = unframe(seq, value)
    record = codec.decode(seq, data)
    if record.seq != seq:
        raise CorruptRecord(seq, f"record claims seq {record.seq}")
    return StoredRecord(record, digest.hex())
