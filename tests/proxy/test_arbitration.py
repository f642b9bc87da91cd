"""Arbitration of unsure pairs by the upstream model, over a real server in front of the
scripted upstream: its ruling decides the pair, and any failure keeps both, linked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mnemolog.eventlog.events import MemoryArbitrated, MemorySuperseded
from mnemolog.memory.writing.arbiter import ruling_of

from .conftest import Proxy, start_proxy
from .scripted import Reply, ScriptedUpstream

# Judged "possible" by the rules on the quality tier (another value, cosine 0.92, over
# e5's link gate of 0.9).
OLDER = "Tom plays tennis on Sundays."
NEWER = "Tom plays golf on Sundays."


@pytest.fixture
def proxy(tmp_path: Path, scripted: tuple[ScriptedUpstream, str]) -> Iterator[Proxy]:
    scripted[0].reset()
    yield from start_proxy(tmp_path / "data", scripted, arbitration=True, arbitration_timeout=1.0)


def write(proxy: Proxy, tag: str, content: str) -> dict[str, object]:
    response = httpx.post(
        f"{proxy.base_url}/memories",
        json={"containerTag": tag, "memories": [{"content": content}]},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    (outcome,) = response.json()["memories"]
    assert isinstance(outcome, dict)
    return outcome


def arbitrations(proxy: Proxy) -> list[MemoryArbitrated]:
    return [
        s.record.event
        for s in proxy.runtime.log.read()
        if isinstance(s.record.event, MemoryArbitrated)
    ]


def test_an_update_ruling_supersedes(proxy: Proxy) -> None:
    (older,) = [write(proxy, "a-update", OLDER)]
    proxy.upstream.script(Reply(content="UPDATE"))
    newer = write(proxy, "a-update", NEWER)
    assert (newer["status"], newer["id"], newer["reason"]) == (
        "superseded",
        older["id"],
        "arbiter_update",
    )
    (asked,) = proxy.upstream.chats()
    body = asked.json
    assert OLDER in body["messages"][1]["content"] and NEWER in body["messages"][1]["content"]
    assert body["stream"] is False
    (ruled,) = arbitrations(proxy)
    assert (ruled.ruling, ruled.memory_id, ruled.failure) == ("update", older["id"], None)
    assert ruled.answer is not None and proxy.runtime.sealer.open_text(ruled.answer) == "UPDATE"
    (superseded,) = [
        s.record.event
        for s in proxy.runtime.log.read()
        if isinstance(s.record.event, MemorySuperseded)
    ]
    assert superseded.evidence is not None and superseded.evidence.rule == "arbiter"


def test_a_different_ruling_keeps_both_unlinked(proxy: Proxy) -> None:
    older = write(proxy, "a-different", OLDER)
    proxy.upstream.script(Reply(content="Different."))
    newer = write(proxy, "a-different", NEWER)
    assert newer["status"] == "created" and newer["possiblyUpdates"] is None
    assert newer["id"] != older["id"]
    (ruled,) = arbitrations(proxy)
    assert ruled.ruling == "different"


@pytest.mark.parametrize(
    ("reply", "failure"),
    [
        (Reply(content="Maybe, hard to say."), "unreadable"),
        (Reply(status=500), "upstream_error"),
        (Reply(content="UPDATE", hang=3.0), "timeout"),
    ],
)
def test_any_failure_keeps_both_linked(proxy: Proxy, reply: Reply, failure: str) -> None:
    older = write(proxy, "a-failure", OLDER)
    proxy.upstream.script(reply)
    newer = write(proxy, "a-failure", NEWER)
    assert (newer["status"], newer["possiblyUpdates"]) == ("created", older["id"])
    (ruled,) = arbitrations(proxy)
    assert (ruled.ruling, ruled.failure) == (None, failure)


def test_a_sure_judgement_never_asks(proxy: Proxy) -> None:
    write(proxy, "a-sure", "John prefers dark mode")
    assert write(proxy, "a-sure", "John prefers dark mode at night")["status"] == "superseded"
    write(proxy, "a-sure", "The alpha service listens on port 5432.")
    assert write(proxy, "a-sure", "The beta service listens on port 5432.")["status"] == ("created")
    assert proxy.upstream.chats() == [] and arbitrations(proxy) == []


@pytest.mark.parametrize(
    ("answer", "ruling"),
    [
        ("UPDATE", "update"),
        ("same.", "same"),
        (" Different - both hold", "different"),
        ("no", None),
    ],
)
def test_the_ruling_is_the_first_word(answer: str, ruling: str | None) -> None:
    assert ruling_of(answer) == ruling
