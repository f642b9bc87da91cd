"""Erasing a profile alone, in process on a real data dir: one sealed under its container's
key, as profiles were before they had a key of their own, goes without the container's other
fields (its recall queries stay readable)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from mnemolog.eventlog import Actor, Draft
from mnemolog.eventlog.events import ProfileUpdated
from mnemolog.eventlog.subjects import container_subject
from mnemolog.memory import NewMemory, RecallRequest
from mnemolog.memory.agents import LOCAL
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

ACTOR = Actor(agent_id="local", protocol="rest")


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    opened = Runtime(Settings(data_dir=tmp_path / "data", embedder="fast"))
    yield opened
    opened.close()


def grep(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_a_profile_sealed_under_its_container_key_is_erased_alone(
    runtime: Runtime, tmp_path: Path
) -> None:
    core = runtime.core
    core.writes.write("u1", [NewMemory(content="Ada keeps bees.")], ACTOR)
    core.recall.search(
        RecallRequest(q="what does Ada keep", container_tag="u1"), origin="rest", actor=ACTOR
    )
    legacy = msgspec.json.encode({"static": ["Likes wqlegacytea"], "dynamic": []})
    sealed = runtime.sealer.seal(container_subject("u1"), legacy)
    core.record([Draft(ACTOR, ProfileUpdated(container_tag="u1", profile=sealed))])
    assert core.memories.profile("u1") is not None
    assert grep(tmp_path, b"wqlegacytea")

    core.erasure.profile("u1", LOCAL)

    assert core.memories.profile("u1") is None
    assert runtime.sealer.open(sealed) is None
    assert grep(tmp_path, b"wqlegacytea") == []
    # The container's other fields were re-sealed, not lost: its query still reads.
    (trace,) = core.traces.recent(container_tag="u1")
    assert trace.query == "what does Ada keep"
    assert [m.content for m in core.memories.list_latest(container_tag="u1", limit=10)[0]] == [
        "Ada keeps bees."
    ]
