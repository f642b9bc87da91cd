"""A buffered turn: call, run memory rounds while the model asks, return the final answer."""

from __future__ import annotations

import json
import time
from typing import Any

from ..errors import UpstreamFailed, UpstreamTimeout
from .calls import ToolCall, calls_of_message
from .turn import Turn
from .upstream import failure_of


async def run_buffered(turn: Turn) -> dict[str, Any]:
    """The completion to return; raises ``UpstreamFailed``/``UpstreamTimeout`` when even the
    client's own request fails upstream."""
    while True:
        body = turn.next_body(stream=False)
        started = time.perf_counter()
        try:
            response = await turn.services.upstream.post_chat(body)
        except (UpstreamFailed, UpstreamTimeout) as exc:
            turn.record_round(body, started, status=None, decision="error", error=exc.code)
            raise
        if not 200 <= response.status_code < 300:
            failure = failure_of(response.status_code, response.content)
            turn.record_round(
                body, started, status=response.status_code, decision="error", error=failure.code
            )
            if response.status_code >= 500 and turn.can_fall_back:
                turn.fall_back("upstream_refused_memory")
                continue
            raise failure
        completion = completion_of(response.content)
        choice = completion["choices"][0]
        raw_message = choice.get("message")
        message: dict[str, Any] = raw_message if isinstance(raw_message, dict) else {}
        raw_content = message.get("content")
        content = raw_content if isinstance(raw_content, str) else ""
        calls = calls_of_message(message)
        memory, client = turn.split(calls)
        turn.add_usage(completion.get("usage"))
        if memory and turn.offers_tool:
            turn.record_round(
                body, started, status=response.status_code, decision="memory", calls=calls
            )
            await turn.memory_round(memory, content)
            continue
        turn.record_round(
            body,
            started,
            status=response.status_code,
            decision="client_tools" if client else "answer",
            calls=calls,
        )
        return final_completion(completion, message, content, client, turn.usage)


def completion_of(raw: bytes) -> dict[str, Any]:
    try:
        completion = json.loads(raw)
    except ValueError as exc:
        raise UpstreamFailed("the upstream's answer is not JSON") from exc
    choices = completion.get("choices") if isinstance(completion, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise UpstreamFailed("the upstream's answer is not a chat completion")
    return dict(completion)


def final_completion(
    completion: dict[str, Any],
    message: dict[str, Any],
    content: str,
    client_calls: list[ToolCall],
    usage: dict[str, int],
) -> dict[str, Any]:
    """The upstream's completion with only the client's calls left in it and a finish reason
    that says so (some servers answer ``stop`` on a turn that carried calls)."""
    choice = dict(completion["choices"][0])
    out_message: dict[str, Any] = {
        k: v for k, v in message.items() if k not in ("tool_calls", "function_call")
    }
    out_message["role"] = "assistant"
    out_message["content"] = content if content or not client_calls else None
    finish = choice.get("finish_reason")
    if client_calls:
        out_message["tool_calls"] = [c.wire() for c in client_calls]
        finish = "tool_calls"
    elif finish in ("tool_calls", "function_call", None):
        finish = "stop"
    choice.update({"index": 0, "message": out_message, "finish_reason": finish})
    out = {**completion, "choices": [choice, *completion["choices"][1:]]}
    out.setdefault("object", "chat.completion")
    if usage:
        out["usage"] = {**(completion.get("usage") or {}), **usage}
    return out


def answer_text(completion: dict[str, Any]) -> str:
    """What the answer digest covers: the content, or the calls returned to the client."""
    message = completion["choices"][0]["message"]
    if message.get("tool_calls"):
        return json.dumps(message["tool_calls"], sort_keys=True)
    return str(message.get("content") or "")
