"""Reading a chat-completions request: strict JSON, a shape check, and mnemolog's own options.

The body is forwarded with every field the client sent (servers accept different extras),
except ``mnemolog``: an object of options for the proxy itself (``containerTag``, ``capture``,
``memory``, ``rerank``), which the ``openai`` client can send with ``extra_body``.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
from fastapi import Request

from ..errors import InvalidInput, MalformedBody
from ..web.request_body import read_body, refuse_deep

ROLES = {"system", "developer", "user", "assistant", "tool", "function"}
CONTAINER_HEADERS = ("x-mnemolog-container-tag", "x-bella-container-tag")
CAPTURE_HEADERS = ("x-mnemolog-capture", "x-bella-capture")
RERANK_HEADERS = ("x-mnemolog-rerank",)


class ProxyOptions(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    container_tag: str | None = None
    capture: bool | None = None
    memory: bool = True
    rerank: bool | None = None  # None: as the server's agent-facing setting says


class ChatRequest(msgspec.Struct, kw_only=True):
    body: dict[str, Any]  # as forwarded, without ``mnemolog``
    raw: bytes
    container_tag: str
    capture: bool
    memory: bool
    rerank: bool | None = None  # the memory round's rerank, when the request says

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream", False))

    @property
    def include_usage(self) -> bool:
        options = self.body.get("stream_options")
        return isinstance(options, dict) and options.get("include_usage") is True

    @property
    def model(self) -> str:
        model = self.body.get("model")
        return model if isinstance(model, str) else ""

    @property
    def client_tools(self) -> list[dict[str, Any]]:
        tools = self.body.get("tools")
        return list(tools) if isinstance(tools, list) else []


async def read_chat_request(
    request: Request, *, max_bytes: int, default_container: str, default_capture: bool
) -> ChatRequest:
    raw = await read_body(request, max_bytes=max_bytes)
    body = parse_body(raw)
    options = _options(body.pop("mnemolog", None))
    container = options.container_tag or _header(request, CONTAINER_HEADERS) or default_container
    if not 1 <= len(container) <= 256:
        raise InvalidInput("the container tag must be 1 to 256 characters")
    capture = options.capture
    if capture is None:
        flag = _header(request, CAPTURE_HEADERS)
        capture = default_capture if flag is None else _flag(flag, CAPTURE_HEADERS[0])
    rerank = options.rerank
    if rerank is None:
        flag = _header(request, RERANK_HEADERS)
        rerank = None if flag is None else _flag(flag, RERANK_HEADERS[0])
    return ChatRequest(
        body=body,
        raw=raw,
        container_tag=container,
        capture=capture,
        memory=options.memory,
        rerank=rerank,
    )


def parse_body(raw: bytes) -> dict[str, Any]:
    """Decode and check the parts of the body the proxy relies on; every failure is a 4xx."""
    refuse_deep(raw)
    try:
        body = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise MalformedBody(f"the body is not valid JSON: {exc}") from exc
    json.loads(raw, object_pairs_hook=_refuse_duplicates)
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidInput("messages must be a non-empty array")
    for n, message in enumerate(messages):
        if not isinstance(message, dict):
            raise InvalidInput(f"messages[{n}] must be an object")
        if message.get("role") not in ROLES:
            raise InvalidInput(f"messages[{n}].role must be one of {sorted(ROLES)}")
    for field, kind in (("model", str), ("stream", bool), ("tools", list), ("n", int)):
        if field in body and body[field] is not None and not isinstance(body[field], kind):
            raise InvalidInput(f"{field} must be a {kind.__name__}")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise InvalidInput("stream_options must be an object")
    if body.get("n") not in (None, 1):
        raise InvalidInput("the proxy answers one choice per request: n must be 1")
    for n, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict):
            raise InvalidInput(f"tools[{n}] must be an object")
    return body


def _options(value: object) -> ProxyOptions:
    if value is None:
        return ProxyOptions()
    try:
        return msgspec.convert(value, ProxyOptions, strict=True)
    except msgspec.ValidationError as exc:
        raise InvalidInput(f"mnemolog options: {exc}") from exc


def _header(request: Request, names: tuple[str, ...]) -> str | None:
    for name in names:
        value = request.headers.get(name)
        if value:
            return value.strip()
    return None


def _flag(value: str, header: str) -> bool:
    lowered = value.lower()
    if lowered in ("1", "true", "on", "yes"):
        return True
    if lowered in ("0", "false", "off", "no"):
        return False
    raise InvalidInput(f"{header} must be on or off, got {value!r}")


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise MalformedBody("a key appears twice in one object")
    return dict(pairs)
