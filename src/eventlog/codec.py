"""Encoding and decoding of records and event bodies (JSON via msgspec).

Decoders are built once. Decoding reads a small header first (``type``, ``schema``); only an
event stored under an older schema takes the slow path through the upcaster chain.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import msgspec

from ..errors import CorruptRecord, InvalidInput
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
        self._actor = msgspec.json.Decoder(Actor)
        self._events: EventDecoder[AnyEvent] = EventDecoder(
            AnyEvent, upcasters or default_upcasters()
        )

    def encode(self, record: Record) -> bytes:
        return self._encoder.encode(record)

    def check_draft(self, actor: Actor, event: AnyEvent) -> bytes:
        """Prove an actor and event decode back to themselves; return their bytes.

        Structs do not validate on construction, so a wrong type, a NaN or an integer past
        64 bits would otherwise be stored as a record that could never be read again.
        """
        name = type(event).__name__
        try:
            actor_bytes = self._encoder.encode(actor)
            event_bytes = self._encoder.encode(event)
            same = (
                self._actor.decode(actor_bytes) == actor
                and self._events.decode(event_bytes) == event
            )
        except (msgspec.MsgspecError, UnicodeError, OverflowError, TypeError) as exc:
            raise InvalidInput(f"{name} cannot be stored: {exc}") from exc
        if not same:
            raise InvalidInput(f"{name} does not survive a round trip (a NaN?)")
        return actor_bytes + b"\0" + event_bytes

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
    return decode_framed(seq, value, codec)[0]


def decode_framed(seq: int, value: bytes, codec: RecordCodec) -> tuple[StoredRecord, bytes]:
    """Check and decode the stored value found under key ``seq``; with the record's bytes
    (what its digest is taken over, and an export holds)."""
    digest, data = unframe(seq, value)
    record = codec.decode(seq, data)
    if record.seq != seq:
        raise CorruptRecord(seq, f"record claims seq {record.seq}")
    return StoredRecord(record, digest.hex()), data
