"""Old schemas still decode: stored fixtures through the codec and the upcaster chain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from mnemolog.errors import CorruptRecord
from mnemolog.eventlog import EVENT_TYPES, RecordCodec
from mnemolog.eventlog.codec import EventDecoder
from mnemolog.eventlog.events import AgentSignal, Event, event_tag
from mnemolog.eventlog.upcasting import MissingUpcaster, Upcasters

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("event_type", EVENT_TYPES, ids=event_tag)
def test_every_stored_schema1_record_still_decodes(event_type: type) -> None:
    stored = (FIXTURES / "schema1" / f"{event_tag(event_type)}.json").read_bytes().strip()
    codec = RecordCodec()
    record = codec.decode(msgspec.json.decode(stored)["seq"], stored)
    assert type(record.event) is event_type
    assert record.event.schema == 1
    # Fields added since (with defaults) may appear; every stored field keeps its value.
    assert _contains(msgspec.json.decode(codec.encode(record)), msgspec.json.decode(stored))


def _contains(new: Any, old: Any) -> bool:
    if isinstance(old, dict):
        return isinstance(new, dict) and all(
            k in new and _contains(new[k], v) for k, v in old.items()
        )
    if isinstance(old, list):
        return isinstance(new, list) and len(new) == len(old) and all(map(_contains, new, old))
    return bool(new == old)


def test_there_is_a_fixture_for_every_kind() -> None:
    names = {p.stem for p in (FIXTURES / "schema1").glob("*.json")}
    assert names == {event_tag(t) for t in EVENT_TYPES}


# A small event family with a history of two breaking changes.
class NoteTaken(Event, frozen=True, kw_only=True, tag="note.taken"):
    schema: int = 3
    text: str
    lang: str
    tags: list[str] = msgspec.field(default_factory=list)


NOTES = Upcasters({"note.taken": 3})


@NOTES.register("note.taken", 1)
def _body_became_text(old: dict[str, Any]) -> dict[str, Any]:
    return {"type": old["type"], "text": old.pop("body"), "language": "und"}


@NOTES.register("note.taken", 2)
def _language_became_lang(old: dict[str, Any]) -> dict[str, Any]:
    new = {k: v for k, v in old.items() if k != "language"}
    return {**new, "lang": old["language"], "tags": []}


@pytest.mark.parametrize(
    ("fixture", "lang"), [("note.taken.schema1.json", "und"), ("note.taken.schema2.json", "en")]
)
def test_old_schemas_run_the_upcaster_chain(fixture: str, lang: str) -> None:
    decoder: EventDecoder[NoteTaken] = EventDecoder(NoteTaken, NOTES)
    note = decoder.decode((FIXTURES / "notes" / fixture).read_bytes())
    assert note == NoteTaken(text="buy milk", lang=lang, tags=[])


def test_the_current_schema_decodes_without_upcasting() -> None:
    decoder: EventDecoder[NoteTaken] = EventDecoder(NoteTaken, NOTES)
    data = msgspec.json.encode(NoteTaken(text="t", lang="fr", tags=["x"]))
    assert decoder.decode(data) == NoteTaken(text="t", lang="fr", tags=["x"])


def test_a_gap_in_the_chain_is_named() -> None:
    gappy = Upcasters({"note.taken": 3})
    gappy.register("note.taken", 2)(_language_became_lang)
    with pytest.raises(MissingUpcaster, match=r"note\.taken schema 1"):
        gappy.upcast({"type": "note.taken", "schema": 1, "body": "x"})


def test_a_record_needing_a_missing_upcaster_is_a_corrupt_record() -> None:
    codec = RecordCodec(Upcasters({event_tag(AgentSignal): 2}))
    stored = (FIXTURES / "schema1" / "agent.signal.json").read_bytes().strip()
    with pytest.raises(CorruptRecord, match=r"no upcaster for agent\.signal schema 1"):
        codec.decode(14, stored)
