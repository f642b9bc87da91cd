"""The proxy end to end: the real ``openai`` client against mnemolog on loopback, in front of
a scripted upstream speaking the wire formats of real servers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import openai
import pytest

from .conftest import Proxy
from .scripted import PERSONAS, Reply

WEATHER = {
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


_OPEN: list[openai.OpenAI] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


def client(proxy: Proxy, **headers: str) -> openai.OpenAI:
    opened = openai.OpenAI(
        base_url=proxy.v1, api_key="client-key", max_retries=0, default_headers=headers
    )
    _OPEN.append(opened)
    return opened


def remember(proxy: Proxy, tag: str, *contents: str) -> list[str]:
    response = httpx.post(
        f"{proxy.base_url}/memories",
        json={"containerTag": tag, "memories": [{"content": c} for c in contents]},
    )
    assert response.status_code == 200, response.text
    return [m["versionId"] for m in response.json()["memories"]]


def inspect(proxy: Proxy, trace_id: str) -> dict[str, object]:
    response = httpx.get(f"{proxy.base_url}/inspect/{trace_id}")
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


def tool_messages(proxy: Proxy, n: int) -> list[dict[str, object]]:
    return [m for m in proxy.upstream.chats()[n].json["messages"] if m["role"] == "tool"]


# --- plain turns -------------------------------------------------------------------------


@pytest.mark.parametrize("persona", PERSONAS)
def test_a_plain_turn_passes_through_with_the_tool_offered(proxy: Proxy, persona: str) -> None:
    proxy.upstream.reset(persona)
    raw = client(proxy).chat.completions.with_raw_response.create(
        model="smollm2-135m",
        messages=[{"role": "user", "content": "What is the capital of France?"}],
    )
    completion = raw.parse()
    assert completion.choices[0].message.content == "Hello from the scripted upstream."
    assert completion.choices[0].finish_reason == "stop"
    assert raw.headers["x-mnemolog-memory-round"] == "false"
    assert raw.headers["x-mnemolog-streamed"] == "false"
    assert raw.headers["x-bella-trace-id"] == raw.headers["x-mnemolog-trace-id"]
    (sent,) = proxy.upstream.chats()
    assert [t["function"]["name"] for t in sent.json["tools"]] == ["searchMemory"]
    assert sent.json["messages"][-1] == {
        "role": "user",
        "content": "What is the capital of France?",
    }
    assert "authorization" not in sent.headers  # the client's key never goes upstream
    trace = inspect(proxy, raw.headers["x-mnemolog-trace-id"])
    assert trace["type"] == "turn" and trace["outcome"] == "answer"


@pytest.mark.parametrize("persona", PERSONAS)
def test_a_streamed_answer_arrives_whole_and_well_formed(proxy: Proxy, persona: str) -> None:
    proxy.upstream.reset(persona)
    proxy.upstream.script(
        Reply(content="The capital of France is Paris.", keepalive=True, ping=True)
    )
    with client(proxy).chat.completions.with_streaming_response.create(
        model="smollm2-135m",
        messages=[{"role": "user", "content": "Capital of France?"}],
        stream=True,
        stream_options={"include_usage": True},
    ) as response:
        assert response.headers["x-mnemolog-streamed"] == "true"
        chunks = list(response.parse())
    answer = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert answer == "The capital of France is Paris."
    assert all(c.choices[0].index == 0 for c in chunks if c.choices)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    if persona == "lcp":  # llama-cpp-python never sends usage while streaming
        assert chunks[-1].choices and chunks[-1].usage is None
    else:
        assert chunks[-1].choices == [] and chunks[-1].usage is not None
        assert chunks[-1].usage.total_tokens == 28


def test_the_stream_helper_of_the_client_reads_the_stream(proxy: Proxy) -> None:
    proxy.upstream.script(Reply(content="Hi there, friend."))
    with client(proxy).chat.completions.stream(
        model="m", messages=[{"role": "user", "content": "Hello"}]
    ) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "Hi there, friend."


# --- memory rounds -----------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("persona", PERSONAS)
def test_a_memory_round_answers_from_memory(proxy: Proxy, persona: str, stream: bool) -> None:
    tag = f"u-round-{persona}-{stream}"
    (version,) = remember(proxy, tag, "John prefers dark mode in every editor")
    proxy.upstream.reset(persona)
    proxy.upstream.script(
        Reply(content=None, calls=[("searchMemory", {"query": "preferred theme"})]),
        Reply(content="You prefer dark mode."),
    )
    messages = [{"role": "user", "content": "Which theme do I prefer?"}]
    proxied = client(proxy, **{"x-mnemolog-container-tag": tag})
    if stream:
        with proxied.chat.completions.with_streaming_response.create(
            model="m", messages=messages, stream=True
        ) as response:
            headers = response.headers
            chunks = list(response.parse())
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert not any(c.choices[0].delta.tool_calls for c in chunks if c.choices)
        assert chunks[-1].choices[0].finish_reason == "stop"
    else:
        raw = proxied.chat.completions.with_raw_response.create(model="m", messages=messages)
        headers = raw.headers
        completion = raw.parse()
        text = completion.choices[0].message.content or ""
        assert completion.choices[0].message.tool_calls is None
        assert completion.choices[0].finish_reason == "stop"
    assert text == "You prefer dark mode."
    assert headers["x-mnemolog-memory-round"] == headers["x-bella-memory-round"] == "true"
    assert headers["x-mnemolog-memory-results"] == "1"
    first, second = proxy.upstream.chats()
    assert "tools" in first.json
    (result,) = tool_messages(proxy, 1)
    assert "John prefers dark mode in every editor" in str(result["content"])
    assert [t["function"]["name"] for t in second.json["tools"]] == ["searchMemory"]
    trace = inspect(proxy, headers["x-mnemolog-trace-id"])
    rounds = trace["rounds"]
    assert isinstance(rounds, list) and [r["decision"] for r in rounds] == ["memory", "answer"]
    assert rounds[0]["arguments"] == ['{"query": "preferred theme"}']
    (injected,) = trace["injections"]  # type: ignore[misc]
    assert injected["versionIds"] == [version] and injected["reproduced"] is True


def test_a_memory_is_injected_with_what_it_was_in_reply_to(proxy: Proxy) -> None:
    tag = "u-round-context"
    written = httpx.post(
        f"{proxy.base_url}/memories",
        json={
            "containerTag": tag,
            "memories": [
                {"content": "Yes, every Sunday morning", "context": "Do you still go running?"}
            ],
        },
    )
    assert written.status_code == 200, written.text
    proxy.upstream.script(
        Reply(content=None, calls=[("searchMemory", {"query": "running"})]),
        Reply(content="You run on Sundays."),
    )
    raw = client(proxy, **{"x-mnemolog-container-tag": tag}).chat.completions.with_raw_response
    answered = raw.create(model="m", messages=[{"role": "user", "content": "Do I exercise?"}])
    (result,) = tool_messages(proxy, 1)
    assert '"Yes, every Sunday morning" (in reply to: "Do you still go running?")' in str(
        result["content"]
    )
    (injected,) = inspect(proxy, answered.headers["x-mnemolog-trace-id"])["injections"]  # type: ignore[misc]
    assert injected["renderer"] == "mnemolog.memories/3" and injected["reproduced"] is True
    assert injected["sources"] == [
        {"agentId": "local", "trust": 1.0, "flags": [], "captured": False}
    ]


def test_client_tool_calls_go_back_untouched(proxy: Proxy) -> None:
    proxy.upstream.script(Reply(content=None, calls=[("get_weather", {"city": "Paris"})]))
    completion = client(proxy).chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[WEATHER],  # type: ignore[list-item]
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls or []
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {
        "city": "Paris"
    }
    (sent,) = proxy.upstream.chats()
    assert [t["function"]["name"] for t in sent.json["tools"]] == ["get_weather", "searchMemory"]


@pytest.mark.parametrize("persona", PERSONAS)
def test_mixed_streamed_calls_run_memory_first_then_return_the_clients(
    proxy: Proxy, persona: str
) -> None:
    remember(proxy, "u-mixed", "Ada lives in Lyon")
    proxy.upstream.reset(persona)
    proxy.upstream.script(
        Reply(
            content=None,
            calls=[("searchMemory", {"query": "home city"}), ("get_weather", {"city": "?"})],
        ),
        Reply(
            content=None,
            calls=[("get_weather", {"city": "Lyon"}), ("get_weather", {"city": "Paris"})],
            no_index=persona in ("ollama", "openai"),
            finish="stop" if persona == "vllm" else None,
        ),
    )
    with client(proxy, **{"x-mnemolog-container-tag": "u-mixed"}).chat.completions.stream(
        model="m",
        messages=[{"role": "user", "content": "Weather at home and in Paris?"}],
        tools=[WEATHER],  # type: ignore[list-item]
    ) as stream:
        final = stream.get_final_completion()
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("get_weather", {"city": "Lyon"}),
        ("get_weather", {"city": "Paris"}),
    ]
    assert len({c.id for c in calls}) == 2
    _first, second = proxy.upstream.chats()
    assistant = second.json["messages"][-2]
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["searchMemory"]


def test_the_round_cap_stops_a_runaway_model(proxy: Proxy) -> None:
    loop = Reply(content=None, calls=[("searchMemory", {"query": "again"})])
    proxy.upstream.script(loop, loop, loop, Reply(content="Fine."))
    raw = client(proxy).chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "Tell me everything."}]
    )
    assert (
        raw.parse().choices[0].message.content is None
        or raw.parse().choices[0].message.content == ""
    )
    assert raw.headers["x-mnemolog-memory-rounds"] == "2"
    chats = proxy.upstream.chats()
    assert len(chats) == 3 and "tools" not in chats[-1].json


@pytest.mark.parametrize("stream", [False, True])
def test_the_async_client_works_alike(proxy: Proxy, stream: bool) -> None:
    remember(proxy, "u-async", "Bob's dog is called Rex")
    proxy.upstream.script(
        Reply(content=None, calls=[("searchMemory", {"query": "dog name"})]),
        Reply(content="Your dog is Rex."),
    )

    async def ask() -> str:
        async with openai.AsyncOpenAI(
            base_url=proxy.v1,
            api_key="k",
            max_retries=0,
            default_headers={"x-mnemolog-container-tag": "u-async"},
        ) as aclient:
            messages = [{"role": "user", "content": "What is my dog's name?"}]
            if not stream:
                done = await aclient.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
                return done.choices[0].message.content or ""
            parts = []
            async for chunk in await aclient.chat.completions.create(
                model="m",
                messages=messages,
                stream=True,  # type: ignore[arg-type]
            ):
                if chunk.choices:
                    parts.append(chunk.choices[0].delta.content or "")
            return "".join(parts)

    assert asyncio.run(ask()) == "Your dog is Rex."
    (result,) = tool_messages(proxy, 1)
    assert "Rex" in str(result["content"])


def test_the_profile_goes_upstream_marked_as_context(proxy: Proxy) -> None:
    put = httpx.put(
        f"{proxy.base_url}/profile",
        json={"containerTag": "u-profile", "static": ["Name: Ada"], "dynamic": ["Planning a trip"]},
    )
    assert put.status_code == 200, put.text
    proxy.upstream.script(Reply(content="Hi Ada."))
    client(proxy).chat.completions.create(
        model="m",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        extra_body={"mnemolog": {"containerTag": "u-profile"}},
    )
    (sent,) = proxy.upstream.chats()
    system, profile, _user = sent.json["messages"]
    assert system == {"role": "system", "content": "Be brief."}
    assert profile["role"] == "system" and profile["content"].startswith(
        "[mnemolog profile context]"
    )
    assert "Name: Ada" in profile["content"] and "Planning a trip" in profile["content"]


def test_memory_can_be_turned_off_per_request(proxy: Proxy) -> None:
    client(proxy).chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Hi"}],
        extra_body={"mnemolog": {"memory": False}},
    )
    (sent,) = proxy.upstream.chats()
    assert "tools" not in sent.json and "mnemolog" not in sent.json


# --- upstream failures -------------------------------------------------------------------


def test_an_upstream_failure_is_a_502_with_its_message(proxy: Proxy) -> None:
    proxy.upstream.script(
        Reply(status=500, error="model crashed"), Reply(status=500, error="model crashed")
    )
    with pytest.raises(openai.APIStatusError) as caught:
        client(proxy).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Hi"}]
        )
    assert caught.value.status_code == 502
    assert "model crashed" in caught.value.message
    body = caught.value.response.json()
    assert body["error"]["code"] == "upstream_error"
    assert caught.value.response.headers["x-mnemolog-trace-id"].startswith("trn_")


def test_an_upstream_refusal_keeps_its_status(proxy: Proxy) -> None:
    proxy.upstream.script(Reply(status=404, error="model 'nope' not found"))
    with pytest.raises(openai.NotFoundError) as caught:
        client(proxy).chat.completions.create(
            model="nope", messages=[{"role": "user", "content": "Hi"}]
        )
    assert "model 'nope' not found" in caught.value.message


def test_a_server_that_fails_on_tools_still_answers_without_memory(proxy: Proxy) -> None:
    proxy.upstream.reset("lcp")
    proxy.upstream.script(Reply(status=500, error=""), Reply(content="Plain answer."))
    raw = client(proxy).chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "Hi"}]
    )
    assert raw.parse().choices[0].message.content == "Plain answer."
    assert "upstream_refused_memory" in raw.headers["x-mnemolog-degraded"]
    first, second = proxy.upstream.chats()
    assert "tools" in first.json and "tools" not in second.json


def test_an_empty_stream_from_llama_cpp_python_falls_back(proxy: Proxy) -> None:
    proxy.upstream.reset("lcp")
    proxy.upstream.script(Reply(empty_stream=True), Reply(content="Streamed anyway."))
    with client(proxy).chat.completions.stream(
        model="m", messages=[{"role": "user", "content": "Hi"}]
    ) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "Streamed anyway."


def test_no_upstream_configured_is_a_clear_503(tmp_path: object) -> None:
    from mnemolog.api import create_app
    from mnemolog.runtime import Runtime
    from mnemolog.settings import Settings

    from ..servers import app_server

    runtime = Runtime(Settings(data_dir=tmp_path / "data", embedder="quality"))  # type: ignore[operator]
    try:
        with app_server(create_app(runtime)) as url:
            response = httpx.post(
                f"{url}/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]}
            )
    finally:
        runtime.close()
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "upstream_not_configured"


def test_models_are_passed_through(proxy: Proxy) -> None:
    models = client(proxy).models.list()
    assert [m.id for m in models.data] == ["smollm2-135m"]


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"{", 400),
        (b"[]", 400),
        (b'{"messages": []}', 400),
        (b'{"messages": [{"role": "wizard", "content": "x"}]}', 400),
        (b'{"messages": [{"role": "user", "content": "x"}], "stream": "yes"}', 400),
        (b'{"messages": [{"role": "user", "content": "x"}], "n": 2}', 400),
        (b'{"messages": [{"role": "user", "content": "x"}], "mnemolog": {"capture": "sure"}}', 400),
        (b'{"messages": [{"role": "user", "content": "x"}], "messages": []}', 400),
        (b'{"messages": [{"role": "user", "content": NaN}]}', 400),
    ],
)
def test_bad_requests_are_4xx_with_the_error_shape(proxy: Proxy, body: bytes, status: int) -> None:
    response = httpx.post(
        f"{proxy.v1}/chat/completions", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == status, response.text
    assert set(response.json()["error"]) == {"code", "message"}
    assert proxy.upstream.chats() == []
