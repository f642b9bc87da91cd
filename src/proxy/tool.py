"""The ``searchMemory`` tool the proxy offers, and the request bodies it sends upstream."""

from __future__ import annotations

import json
from typing import Any

SEARCH_MEMORY = "searchMemory"

SEARCH_MEMORY_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": SEARCH_MEMORY,
        "description": (
            "Search the user's long-term memory for facts, preferences and past events the"
            " user told you before. Call it when the answer may depend on them."
        ),
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "what to look for"}},
            "required": ["query"],
        },
    },
}


class BadArguments(ValueError):
    """The model's ``searchMemory`` arguments are not usable."""


def search_query(arguments: str) -> str:
    """The query of a ``searchMemory`` call, from its JSON arguments."""
    try:
        parsed = json.loads(arguments) if arguments.strip() else None
    except ValueError as exc:
        raise BadArguments("the arguments are not JSON") from exc
    if not isinstance(parsed, dict):
        raise BadArguments("the arguments are not a JSON object")
    query = parsed.get("query")
    if not isinstance(query, str) or not query.strip():
        raise BadArguments("the arguments have no query")
    return query.strip()[:1000]


def client_defines_search(tools: list[dict[str, Any]]) -> bool:
    """A client tool of the same name wins: its calls are the client's, never the proxy's."""
    return any(_tool_name(tool) == SEARCH_MEMORY for tool in tools)


def upstream_body(
    body: dict[str, Any],
    messages: list[dict[str, Any]],
    *,
    offer_tool: bool,
    stream: bool,
) -> dict[str, Any]:
    """The body of one upstream call: the client's, with the conversation so far and, while
    memory rounds are left, ``searchMemory`` among the tools."""
    out = dict(body)
    out["messages"] = messages
    out["stream"] = stream
    if not stream:
        out.pop("stream_options", None)
    client_tools = body.get("tools") if isinstance(body.get("tools"), list) else None
    if offer_tool:
        out["tools"] = [*(client_tools or []), SEARCH_MEMORY_TOOL]
    elif not client_tools:
        # No tool left to call: a tool_choice of "required" would make a strict server fail.
        out.pop("tools", None)
        out.pop("tool_choice", None)
        out.pop("parallel_tool_calls", None)
    elif _tool_name(out.get("tool_choice")) == SEARCH_MEMORY:
        out.pop("tool_choice")  # it named the tool no longer offered
    return out


def with_profile(messages: list[dict[str, Any]], profile: str | None) -> list[dict[str, Any]]:
    """The client's messages with the profile context as a system message after its own."""
    out = [_normalised(m) for m in messages]
    if profile is None:
        return out
    at = 0
    while at < len(out) and out[at].get("role") in ("system", "developer"):
        at += 1
    return [*out[:at], {"role": "system", "content": profile}, *out[at:]]


def _normalised(message: dict[str, Any]) -> dict[str, Any]:
    # Some servers (llama-cpp-python) answer 500 to an assistant tool-call turn whose content
    # is null; an empty string means the same to every server.
    if message.get("role") == "assistant" and message.get("content") is None:
        return {**message, "content": ""}
    return message


def _tool_name(tool: object) -> str | None:
    """The function a tool (or a named tool_choice) is about."""
    if isinstance(tool, dict):
        function = tool.get("function")
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            return str(function["name"])
    return None
