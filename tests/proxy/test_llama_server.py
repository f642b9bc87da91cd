"""The real-server tier: llama.cpp's ``llama-server`` with SmolLM2-135M-Instruct as the upstream,
built and cached by ``tools/llama_server.sh`` (which ``.ci/run`` calls first).

The model is tiny and rarely decides to call a tool by itself, so these tests check the wire
protocol end to end (plain, streamed, a tool-result round trip, a memory round when the
client forces the tool); which tool is called with what is the scripted upstream's job.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from mnemolog.eventlog.events import ProxyTurn

from ..servers import free_port
from .conftest import Proxy, start_proxy
from .scripted import ScriptedUpstream

pytestmark = pytest.mark.slow

CACHE = Path(
    os.environ.get("MNEMOLOG_LLAMA_CACHE") or Path.home() / ".cache" / "mnemolog" / "llama-server"
)
BINARY = CACHE / "bin" / "llama-server"
MODEL = CACHE / "SmolLM2-135M-Instruct.Q4_1.gguf"
TEMPLATE = CACHE / "Qwen-Qwen2.5-7B-Instruct.jinja"
WEATHER: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    missing = [str(p) for p in (BINARY, MODEL, TEMPLATE) if not p.exists()]
    if missing:
        reason = f"llama-server is not built: run tools/llama_server.sh (missing {missing})"
        if os.environ.get("CI"):
            pytest.fail(reason)  # CI builds it first: its absence is a failure, not a skip
        pytest.skip(reason)
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama") / "llama-server.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [
            str(BINARY),
            "-m",
            str(MODEL),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--jinja",
            "--chat-template-file",
            str(TEMPLATE),
            "-c",
            "4096",
            "-t",
            "2",
            "--no-webui",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_ready(f"http://127.0.0.1:{port}", proc, log_path)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _wait_ready(base: str, proc: subprocess.Popen[bytes], log_path: Path) -> None:
    """/health refuses connections, then answers 503 while the model loads, then 200.

    A server that dies on the way fails at once with the end of its own log, which says why
    (a crash in a CPU kernel, a model that does not load)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log_path.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"llama-server exited with {proc.returncode}:\n{tail}")
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    tail = log_path.read_text(errors="replace")[-3000:]
    raise TimeoutError(f"llama-server not ready after 180 s:\n{tail}")


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory, llama_server: str) -> Iterator[Proxy]:
    unused = ScriptedUpstream()  # start_proxy wants one; the real server is the upstream
    yield from start_proxy(tmp_path_factory.mktemp("real") / "data", (unused, llama_server))


def client(proxy: Proxy, tag: str = "u-real") -> openai.OpenAI:
    return openai.OpenAI(
        base_url=proxy.v1,
        api_key="k",
        max_retries=0,
        timeout=120,
        default_headers={"x-mnemolog-container-tag": tag},
    )


def turn(proxy: Proxy, turn_id: str) -> ProxyTurn:
    for stored in proxy.runtime.log.read():
        if isinstance(stored.record.event, ProxyTurn) and stored.record.event.turn_id == turn_id:
            return stored.record.event
    raise AssertionError(turn_id)


def test_models_come_from_llama_server(real: Proxy) -> None:
    with client(real) as c:
        assert [m.id for m in c.models.list().data]


def test_a_plain_turn(real: Proxy) -> None:
    with client(real) as c:
        raw = c.chat.completions.with_raw_response.create(
            model="smollm2-135m",
            messages=[{"role": "user", "content": "What is the capital of France?"}],
            max_tokens=24,
            temperature=0,
        )
    completion = raw.parse()
    assert completion.choices[0].finish_reason in ("stop", "length")
    assert completion.choices[0].message.content or completion.choices[0].message.tool_calls
    assert completion.usage is not None and completion.usage.total_tokens > 0
    recorded = turn(real, raw.headers["x-mnemolog-trace-id"])
    assert recorded.outcome in ("answer", "client_tools") and recorded.status == 200
    assert all(r.status == 200 for r in recorded.rounds)


def test_a_streamed_turn(real: Proxy) -> None:
    with (
        client(real) as c,
        c.chat.completions.with_streaming_response.create(
            model="smollm2-135m",
            messages=[{"role": "user", "content": "Say hello."}],
            max_tokens=24,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
        ) as response,
    ):
        chunks = list(response.parse())
        turn_id = response.headers["x-mnemolog-trace-id"]
    with_choices = [c for c in chunks if c.choices]
    assert with_choices and all(c.choices[0].index == 0 for c in with_choices)
    assert with_choices[-1].choices[0].finish_reason in ("stop", "length", "tool_calls")
    assert chunks[-1].usage is not None and chunks[-1].choices == []
    assert turn(real, turn_id).stream is True


@pytest.mark.parametrize("stream", [False, True])
def test_a_tool_result_round_trip(real: Proxy, stream: bool) -> None:
    messages: Any = [
        {"role": "user", "content": "What is the weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"weather": "sunny, 24 C"}'},
    ]
    with client(real) as c:
        if not stream:
            final = c.chat.completions.create(
                model="smollm2-135m", messages=messages, tools=[WEATHER], max_tokens=32
            )
            choice = final.choices[0]
            assert choice.finish_reason in ("stop", "length", "tool_calls")
            assert choice.message.content is not None or choice.message.tool_calls
            for call in choice.message.tool_calls or []:
                json.loads(call.function.arguments or "{}")  # whatever it called: well-formed
            return
        # Read by hand: the client's stream helper refuses an answer cut by max_tokens.
        chunks = [
            chunk
            for chunk in c.chat.completions.create(
                model="smollm2-135m", messages=messages, tools=[WEATHER], max_tokens=32, stream=True
            )
            if chunk.choices
        ]
    assert all(chunk.choices[0].index == 0 for chunk in chunks)
    finish = chunks[-1].choices[0].finish_reason
    calls = [call for chunk in chunks for call in chunk.choices[0].delta.tool_calls or []]
    assert all(call.index is not None and call.id for call in calls)
    assert (finish == "tool_calls") == bool(calls)
    assert finish in ("stop", "length", "tool_calls")


def test_a_forced_memory_round_reaches_the_real_server(real: Proxy) -> None:
    httpx.post(
        f"{real.base_url}/memories",
        json={"containerTag": "u-real", "memories": [{"content": "I prefer dark mode."}]},
    ).raise_for_status()
    with client(real) as c:
        raw = c.chat.completions.with_raw_response.create(
            model="smollm2-135m",
            messages=[{"role": "user", "content": "Which theme do I prefer? Use searchMemory."}],
            tool_choice={"type": "function", "function": {"name": "searchMemory"}},
            max_tokens=48,
            temperature=0,
        )
    completion = raw.parse()
    assert completion.choices[0].finish_reason in ("stop", "length", "tool_calls")
    assert not any(
        call.function.name == "searchMemory"
        for call in completion.choices[0].message.tool_calls or []
    )
    recorded = turn(real, raw.headers["x-mnemolog-trace-id"])
    assert recorded.status == 200 and recorded.outcome in ("answer", "client_tools")
    if recorded.memory_round:  # the model took it: the tool result went to the real server
        assert raw.headers["x-mnemolog-memory-round"] == "true"
        assert [r.status for r in recorded.rounds] == [200] * len(recorded.rounds)
        trace = httpx.get(f"{real.base_url}/inspect/{recorded.turn_id}").json()
        assert all(i["reproduced"] is True for i in trace["injections"])
