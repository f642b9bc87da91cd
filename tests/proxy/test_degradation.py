"""Memory failures degrade a turn to a memory-less answer, never a failed one; slow or broken
upstreams map to 504/502; a client that goes away cancels the upstream call."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from mnemolog.eventlog.events import ProxyTurn

from .conftest import Proxy, start_proxy
from .scripted import Reply, ScriptedUpstream


class FailingRecall:
    def search(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the index is gone")


class SlowRecall:
    def __init__(self, real: Any) -> None:
        self.real = real

    def search(self, *args: Any, **kwargs: Any) -> Any:
        time.sleep(1.0)
        return self.real.search(*args, **kwargs)


@pytest.fixture(scope="module")
def impatient(
    tmp_path_factory: pytest.TempPathFactory, scripted: tuple[ScriptedUpstream, str]
) -> Iterator[Proxy]:
    """A proxy with short recall and idle timeouts."""
    data_dir = tmp_path_factory.mktemp("impatient") / "data"
    yield from start_proxy(data_dir, scripted, proxy_recall_timeout=0.2, upstream_idle_timeout=0.5)


def ask(proxy: Proxy, *, stream: bool) -> tuple[str, httpx.Headers]:
    with openai.OpenAI(base_url=proxy.v1, api_key="k", max_retries=0) as client:
        messages: Any = [{"role": "user", "content": "Where do I live?"}]
        if not stream:
            raw = client.chat.completions.with_raw_response.create(model="m", messages=messages)
            return raw.parse().choices[0].message.content or "", raw.headers
        with client.chat.completions.with_streaming_response.create(
            model="m", messages=messages, stream=True
        ) as response:
            text = "".join(c.choices[0].delta.content or "" for c in response.parse() if c.choices)
            return text, response.headers


def turn_of(proxy: Proxy, turn_id: str) -> ProxyTurn:
    for stored in proxy.runtime.log.read():
        event = stored.record.event
        if isinstance(event, ProxyTurn) and event.turn_id == turn_id:
            return event
    raise AssertionError(f"no turn {turn_id}")


def assert_memoryless(proxy: Proxy, reason: str, headers: httpx.Headers) -> None:
    assert reason in headers["x-mnemolog-degraded"].split(",")
    assert headers["x-mnemolog-memory-round"] == "false"
    last = proxy.upstream.chats()[-1].json
    assert "tools" not in last and all(m["role"] != "tool" for m in last["messages"])
    turn = turn_of(proxy, headers["x-mnemolog-trace-id"])
    assert turn.outcome == "answer" and turn.status == 200
    assert reason in turn.degraded and turn.rounds[0].error == reason
    trace = httpx.get(f"{proxy.base_url}/inspect/{turn.turn_id}").json()
    assert reason in trace["degraded"] and trace["rounds"][0]["error"] == reason


@pytest.mark.parametrize("stream", [False, True])
def test_a_failing_recall_still_answers(
    proxy: Proxy, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    monkeypatch.setattr(proxy.runtime.core, "recall", FailingRecall())
    proxy.upstream.script(
        Reply(content=None, calls=[("searchMemory", {"query": "home"})]),
        Reply(content="I do not know where you live."),
    )
    text, headers = ask(proxy, stream=stream)
    assert text == "I do not know where you live."
    assert_memoryless(proxy, "recall_failed", headers)


@pytest.mark.parametrize("stream", [False, True])
def test_a_slow_recall_times_out_and_still_answers(
    impatient: Proxy, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    monkeypatch.setattr(impatient.runtime.core, "recall", SlowRecall(impatient.runtime.core.recall))
    impatient.upstream.script(
        Reply(content=None, calls=[("searchMemory", {"query": "home"})]),
        Reply(content="No idea."),
    )
    text, headers = ask(impatient, stream=stream)
    assert text == "No idea."
    assert_memoryless(impatient, "recall_timeout", headers)


@pytest.mark.parametrize("arguments", ["{not json", "{}", '{"query": ""}', "[1]"])
@pytest.mark.parametrize("stream", [False, True])
def test_malformed_tool_arguments_still_answer(proxy: Proxy, arguments: str, stream: bool) -> None:
    proxy.upstream.script(
        Reply(content=None, calls=[("searchMemory", arguments)]),
        Reply(content="Answer without memory."),
    )
    text, headers = ask(proxy, stream=stream)
    assert text == "Answer without memory."
    assert_memoryless(proxy, "bad_arguments", headers)


def test_an_idle_stream_is_a_504(impatient: Proxy) -> None:
    impatient.upstream.script(
        Reply(content="too late", hang=3.0), Reply(content="too late", hang=3.0)
    )
    with pytest.raises(openai.APIStatusError) as caught:
        ask(impatient, stream=True)
    assert caught.value.status_code == 504
    assert caught.value.response.json()["error"]["code"] == "upstream_timeout"


def test_a_stream_that_stalls_midway_ends_with_an_error_event(impatient: Proxy) -> None:
    impatient.upstream.script(Reply(content="Partial answer then silence", hang=3.0, hang_at=3))
    parts: list[str] = []
    with (
        openai.OpenAI(base_url=impatient.v1, api_key="k", max_retries=0) as client,
        pytest.raises(openai.APIError, match="no event"),
    ):
        for chunk in client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Hi"}], stream=True
        ):
            parts.append(chunk.choices[0].delta.content or "")
    assert "".join(parts) == "Partial answer"
    (turn,) = [
        s.record.event
        for s in impatient.runtime.log.read(from_seq=impatient.checked_seq + 1)
        if isinstance(s.record.event, ProxyTurn) and s.record.event.outcome == "upstream_error"
    ]
    assert turn.status == 504 and turn.rounds[-1].error == "upstream_timeout"


def test_an_unreachable_upstream_is_a_502(tmp_path: Path) -> None:
    from ..servers import free_port

    upstream = ScriptedUpstream()
    port = free_port()
    # Credentials written into the URL are never repeated in an error.
    dead = (upstream, f"http://user:secret@127.0.0.1:{port}")
    for proxy in start_proxy(tmp_path / "data", dead):
        with pytest.raises(openai.APIStatusError) as caught:
            ask(proxy, stream=False)
        assert caught.value.status_code == 502
        error = caught.value.response.json()["error"]
        assert error["code"] == "upstream_error"
        assert f"the upstream at http://127.0.0.1:{port}/v1 cannot be reached" in error["message"]
        assert "secret" not in error["message"]
        models = httpx.get(f"{proxy.v1}/models")
        assert models.status_code == 502


def wait_for(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + 20
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}")
        time.sleep(0.05)


def test_a_client_that_leaves_mid_stream_cancels_the_upstream_call(proxy: Proxy) -> None:
    proxy.upstream.script(Reply(content=" ".join(["word"] * 200), delay=0.1))
    with httpx.stream(
        "POST",
        f"{proxy.v1}/chat/completions",
        json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "Talk"}]},
    ) as response:
        turn_id = response.headers["x-mnemolog-trace-id"]
        for line in response.iter_lines():
            if '"content":"word"' in line:
                break
    (sent,) = proxy.upstream.chats()
    wait_for(lambda: sent.cancelled, "the upstream saw the proxy go away")
    assert not sent.completed
    wait_for(lambda: _has_turn(proxy, turn_id), "the cancelled turn was recorded")
    assert turn_of(proxy, turn_id).outcome == "cancelled"


def test_a_client_that_leaves_a_buffered_turn_cancels_the_upstream_call(proxy: Proxy) -> None:
    proxy.upstream.script(Reply(content="slow", hang=10.0))
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            f"{proxy.v1}/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "Take your time"}]},
            timeout=0.5,
        )
    wait_for(lambda: bool(proxy.upstream.chats()) and proxy.upstream.chats()[0].cancelled, "cancel")
    wait_for(
        lambda: any(
            isinstance(s.record.event, ProxyTurn) and s.record.event.outcome == "cancelled"
            for s in proxy.runtime.log.read(from_seq=max(1, proxy.checked_seq))
        ),
        "the cancelled turn was recorded",
    )


def _has_turn(proxy: Proxy, turn_id: str) -> bool:
    return any(
        isinstance(s.record.event, ProxyTurn) and s.record.event.turn_id == turn_id
        for s in proxy.runtime.log.read()
    )
