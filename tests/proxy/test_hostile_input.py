"""Hostile input to the chat proxy is a 4xx with the error body, never a 500: JSON nested past
any parser's recursion, in the client's body or in the model's tool arguments."""

from __future__ import annotations

import json

import httpx
import openai

from .conftest import Proxy
from .scripted import Reply


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def chat_body(extra: str) -> bytes:
    head = '{"model":"m","messages":[{"role":"user","content":"hi"}],"metadata":'
    return (head + extra + "}").encode()


def test_a_body_nested_past_any_parser_is_refused(proxy: Proxy) -> None:
    proxy.upstream.reset()
    head = proxy.runtime.log.head().seq
    for depth in (200, 1100, 50_000):
        answer = httpx.post(
            f"{proxy.v1}/chat/completions",
            content=chat_body(deep(depth)),
            headers={"content-type": "application/json"},
            timeout=30,
        )
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["code"] == "malformed_body"
    assert proxy.upstream.received == [] and proxy.runtime.log.head().seq == head


def test_nesting_a_request_needs_goes_through(proxy: Proxy) -> None:
    """Brackets inside strings are not nesting; a tool schema fifty properties deep (over a
    hundred levels of objects) is."""
    proxy.upstream.reset()
    schema: dict[str, object] = {"type": "string"}
    for _ in range(50):
        schema = {"type": "object", "properties": {"x": schema}}
    tool = {"type": "function", "function": {"name": "f", "parameters": schema}}
    with openai.OpenAI(base_url=proxy.v1, api_key="k", max_retries=0) as client:
        made = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": '"' + "[{" * 3000 + '\\"'}],
            tools=[tool],  # type: ignore[list-item]
        )
    assert made.choices[0].message.content
    (sent,) = proxy.upstream.chats()
    assert sent.json["tools"][0] == tool  # then the proxy's own searchMemory


def test_tool_arguments_nested_past_any_parser_degrade_the_turn(proxy: Proxy) -> None:
    arguments = json.dumps({"query": "x"})[:-1] + ', "deep": ' + deep(5000) + "}"
    proxy.upstream.script(
        Reply(content=None, calls=[("searchMemory", arguments)]), Reply(content="Hello.")
    )
    with openai.OpenAI(base_url=proxy.v1, api_key="k", max_retries=0) as client:
        raw = client.chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": "Where do I live?"}]
        )
    assert raw.parse().choices[0].message.content == "Hello."
    assert "bad_arguments" in raw.headers["x-mnemolog-degraded"].split(",")
