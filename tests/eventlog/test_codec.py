from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemolog.errors import CorruptRecord
from mnemolog.eventlog import EVENT_TYPES, Record, RecordCodec
from mnemolog.eventlog.events import AgentSignal, event_tag
from mnemolog.eventlog.record import DIGEST_SIZE, GENESIS, frame, unframe

from ..factories import ACTOR
from .strategies import any_actor, any_event, struct_of

CODEC = RecordCodec()


@given(
    event=any_event,
    actor=any_actor,
    seq=st.integers(1, 2**63 - 1),
    ts=st.integers(0, 2**63 - 1),
)
def test_every_event_survives_encode_decode(event, actor, seq, ts) -> None:
    record = Record(seq=seq, ts=ts, actor=actor, prev=GENESIS, event=event)
    assert CODEC.decode(seq, CODEC.encode(record)) == record


# The tag is the type's: a few events of each kind show it (the round trip of every field is
# the property above).
@pytest.mark.parametrize("event_type", EVENT_TYPES, ids=event_tag)
@settings(max_examples=10)
@given(data=st.data())
def test_each_kind_keeps_its_tag(event_type, data) -> None:
    event = data.draw(struct_of(event_type))
    record = Record(seq=1, ts=0, actor=ACTOR, prev=GENESIS, event=event)
    decoded = CODEC.decode(1, CODEC.encode(record))
    assert type(decoded.event) is event_type
    assert decoded.kind == event_tag(event_type)
    assert msgspec.json.decode(CODEC.encode(record))["event"]["type"] == event_tag(event_type)


def test_tags_are_unique_and_dotted() -> None:
    tags = [event_tag(t) for t in EVENT_TYPES]
    assert len(set(tags)) == len(tags)
    assert all("." in tag for tag in tags)


def test_unknown_event_type_is_a_corrupt_record() -> None:
    data = b'{"v":1,"seq":3,"ts":0,"actor":{"agent_id":"a","protocol":"rest"},"prev":"0",'
    data += b'"event":{"type":"from.the.future","schema":1}}'
    with pytest.raises(CorruptRecord) as info:
        CODEC.decode(3, data)
    assert info.value.seq == 3


def test_framing_detects_any_flipped_bit_of_a_plain_record() -> None:
    data = b'{"v":1,"seq":1}'  # too short for compression to make it smaller: stored as is
    value = frame(data)
    assert value[DIGEST_SIZE:] == data
    for bit in range(len(value) * 8):
        flipped = bytearray(value)
        flipped[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(CorruptRecord):
            unframe(1, bytes(flipped))


def test_a_flipped_bit_of_a_compressed_record_is_detected_or_changes_nothing() -> None:
    """A zstd frame has bits its decoder ignores (a few of a header, of a table): flipping one
    gives back the very record, whose digest holds. Any other flip is refused."""
    record = Record(
        seq=1, ts=5, actor=ACTOR, prev=GENESIS, event=AgentSignal(agent_id="a", signal="positive")
    )
    data = CODEC.encode(record)
    value = frame(data)
    assert len(value) < DIGEST_SIZE + len(data)  # compressed
    assert unframe(1, value)[1] == data
    detected = 0
    for bit in range(len(value) * 8):
        flipped = bytearray(value)
        flipped[bit // 8] ^= 1 << (bit % 8)
        try:
            _, read = unframe(1, bytes(flipped))
        except CorruptRecord:
            detected += 1
            continue
        assert read == data
    assert detected > 0.95 * len(value) * 8
