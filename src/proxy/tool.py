"""The tools the proxy offers (``searchMemory``, and ``saveMemory`` when it is on), their
arguments, and the request bodies it sends upstream."""

from __future__ import annotations

import json
from typing import Any

import msgspec

SEARCH_MEMORY = "searchMemory"
SAVE_MEMORY = "saveMemory"
MAX_SAVE_CHARS = 2000

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


# The schema says only what every server's grammar takes (no length bounds: llama.cpp would
# expand a maxLength of 2000 into a grammar rule per character); the bounds are checked here.
SAVE_MEMORY_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": SAVE_MEMORY,
        "description": (
            "Save a fact about the user to their long-term memory. Call it when the user tells"
            " you something new about themselves worth remembering, or corrects something they"
            " told you before. When the user corrects a memory that searchMemory showed you,"
            " pass that memory's number as replaces, so the old one is replaced."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "content": {
                    "type": "string",
                    "description": (
                        "the fact, as one short sentence that stands on its own"
                        " (for example: John prefers light mode)"
                    ),
                },
                "replaces": {
                    "type": "integer",
                    "description": (
                        "the number of the memory this corrects, as listed in the last"
                        " searchMemory result; leave it out for a new fact"
                    ),
                },
            },
            "required": ["content"],
        },
    },
}


class BadArguments(ValueError):
    """The model's ``searchMemory`` or ``saveMemory`` arguments are not usable."""


def search_query(arguments: str) -> str:
    """The query of a ``searchMemory`` call, from its JSON arguments."""
    query = _json_object(arguments).get("query")
    if not isinstance(query, str) or not query.strip():
        raise BadArguments("the arguments have no query")
    return query.strip()[:1000]


class SaveArguments(msgspec.Struct, frozen=True, kw_only=True):
    content: str
    replaces: int | None = None  # the number of a memory in the last result shown


def save_arguments(arguments: str) -> SaveArguments:
    """The content and ``replaces`` of a ``saveMemory`` call, from its JSON arguments."""
    parsed = _json_object(arguments)
    content = parsed.get("content")
    if not isinstance(content, str) or not content.strip():
        raise BadArguments("the arguments have no content")
    content = content.strip()
    if len(content) > MAX_SAVE_CHARS:
        raise BadArguments(f"the content is longer than {MAX_SAVE_CHARS} characters")
    replaces = parsed.get("replaces")
    if isinstance(replaces, str) and replaces.strip().isdecimal():
        replaces = int(replaces.strip())  # small models often quote numbers
    if replaces is not None and (
        not isinstance(replaces, int) or isinstance(replaces, bool) or replaces < 1
    ):
        raise BadArguments("replaces is not the number of a memory")
    return SaveArguments(content=content, replaces=replaces)


def client_defines_search(tools: list[dict[str, Any]]) -> bool:
    """A client tool of the same name wins: its calls are the client's, never the proxy's."""
    return client_defines(tools, SEARCH_MEMORY)


def client_defines(tools: list[dict[str, Any]], name: str) -> bool:
    return any(_tool_name(tool) == name for tool in tools)


def upstream_body(
    body: dict[str, Any],
    messages: list[dict[str, Any]],
    *,
    offer_tool: bool,
    stream: bool,
    offer_save: bool = False,
) -> dict[str, Any]:
    """The body of one upstream call: the client's, with the conversation so far and, while
    memory rounds are left, ``searchMemory`` (and ``saveMemory`` when asked) among the tools."""
    out = dict(body)
    out["messages"] = messages
    out["stream"] = stream
    if not stream:
        out.pop("stream_options", None)
    client_tools = body.get("tools") if isinstance(body.get("tools"), list) else None
    if offer_tool:
        ours = [SEARCH_MEMORY_TOOL, SAVE_MEMORY_TOOL] if offer_save else [SEARCH_MEMORY_TOOL]
        out["tools"] = [*(client_tools or []), *ours]
    elif not client_tools:
        # No tool left to call: a tool_choice of "required" would make a strict server fail.
        out.pop("tools", None)
        out.pop("tool_choice", None)
        out.pop("parallel_tool_calls", None)
    named = _tool_name(out.get("tool_choice"))
    if named in (SEARCH_MEMORY, SAVE_MEMORY) and not client_defines(out.get("tools") or [], named):
        out.pop("tool_choice")  # it named a tool of ours that is not offered
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


def _json_object(arguments: str) -> dict[str, Any]:
    try:
        parsed = json.loads(arguments) if arguments.strip() else None
    except (ValueError, RecursionError) as exc:  # nested past the parser's stack: no query
        raise BadArguments("the arguments are not JSON") from exc
    if not isinstance(parsed, dict):
        raise BadArguments("the arguments are not a JSON object")
    return parsed


def _tool_name(tool: object) -> str | None:
    """The function a tool (or a named tool_choice) is about."""
    if isinstance(tool, dict):
        function = tool.get("function")
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            return str(function["name"])
    return None
