"""A scripted upstream LLM server on loopback that speaks the exact wire formats of real ones.

Each persona reproduces one server's bytes, modelled on recorded captures
(``../shared/wire-captures``) and the servers' own output formats:

- ``openai``: compact JSON, ``usage: null`` in every chunk when usage is asked for, tool-call
  ids and names once then argument fragments by ``index``, a usage chunk with empty ``choices``;
- ``vllm``: like OpenAI without ``usage: null``, an empty first content;
- ``llamacpp`` (llama-server): fields in its order, ``content: null`` in the role chunk,
  ``timings``, a usage chunk with empty ``choices``;
- ``lcp`` (llama-cpp-python): ``", "`` separators, tool-call id and name repeated in every
  delta next to the legacy ``function_call``, ``content: null`` tool-call messages;
- ``ollama``: whole tool calls in one delta without ``index``, ``finish_reason: stop`` on a
  turn that carried calls.

Quirks can be added to any reply: keep-alive comments, empty-``choices`` pings, deltas
without ``index``, ``finish_reason: stop`` on tool calls, an empty 200 stream, a hang. Every
request is recorded with its exact bytes.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from mnemolog.proxy.fact_distill import DISTILL_PROMPT

PERSONAS = ("openai", "vllm", "llamacpp", "lcp", "ollama")
MODEL = "smollm2-135m"
SESSION_COOKIE = "tenant-a-session-4417"  # set by the upstream for one client's call


@dataclass
class Reply:
    """One scripted answer."""

    content: str | None = "Hello from the scripted upstream."
    calls: list[tuple[str, Any]] = field(default_factory=list)  # (name, arguments)
    persona: str | None = None  # None: the server's default persona
    status: int = 200
    error: str = "scripted failure"
    finish: str | None = None  # a finish reason to send instead of the right one
    keepalive: bool = False  # ": keep-alive" comments between events
    ping: bool = False  # empty-choices chunks before and among the events
    no_index: bool = False  # tool-call deltas without "index"
    empty_stream: bool = False  # a 200 stream with no event at all
    delay: float = 0.0  # seconds between streamed events
    hang: float = 0.0  # seconds to stall before event number ``hang_at`` (or a whole answer)
    hang_at: int = 1
    json_for_stream: bool = False  # answer a streamed request with a whole completion


@dataclass
class Received:
    path: str
    raw: bytes
    headers: dict[str, str]
    completed: bool = False  # the whole answer was written
    cancelled: bool = False  # the caller went away mid-answer

    @property
    def json(self) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.raw)
        return body


class ScriptedUpstream:
    def __init__(self, persona: str = "openai") -> None:
        self.persona = persona
        self.replies: deque[Reply | Callable[[dict[str, Any]], Reply]] = deque()
        self.distill_replies: deque[Reply] = deque()
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self.app = self._build()

    def script(self, *replies: Reply | Callable[[dict[str, Any]], Reply]) -> None:
        with self._lock:
            self.replies.extend(replies)

    def reset(self, persona: str = "openai") -> None:
        with self._lock:
            self.persona = persona
            self.replies.clear()
            self.distill_replies.clear()
            self.received.clear()

    def chats(self) -> list[Received]:
        """The chat requests received, distillation requests left out."""
        return [
            r
            for r in self.received
            if r.path.endswith("/chat/completions") and not _is_distill(r.json)
        ]

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if _is_distill(body):
                return (
                    self.distill_replies.popleft() if self.distill_replies else Reply(content="[]")
                )
            scripted = self.replies.popleft() if self.replies else Reply()
        return scripted(body) if callable(scripted) else scripted

    def _build(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> Response:
            raw = await request.body()
            received = Received(request.url.path, raw, dict(request.headers))
            self.received.append(received)
            body = json.loads(raw)
            reply = self._next(body)
            persona = reply.persona or self.persona
            if reply.status != 200:
                return JSONResponse(
                    error_body(persona, reply.status, reply.error), status_code=reply.status
                )
            if body.get("stream") and not reply.json_for_stream:
                usage = bool((body.get("stream_options") or {}).get("include_usage"))
                events = [] if reply.empty_stream else stream_events(persona, reply, usage)
                return StreamingResponse(
                    _paced(events, reply, received),
                    media_type="text/event-stream",
                    headers={"cache-control": "no-cache"},
                )
            if reply.hang:  # a slow buffered answer; a caller that goes away is noticed
                deadline = time.monotonic() + reply.hang
                while time.monotonic() < deadline:
                    if await request.is_disconnected():
                        received.cancelled = True
                        return Response(status_code=499)
                    await asyncio.sleep(0.05)
            received.completed = True
            return Response(completion_bytes(persona, reply), media_type="application/json")

        @app.post("/v1/embeddings")
        async def embeddings(request: Request) -> Response:
            raw = await request.body()
            self.received.append(Received(request.url.path, raw, dict(request.headers)))
            texts = json.loads(raw)["input"]
            texts = [texts] if isinstance(texts, str) else texts
            data = [
                {"object": "embedding", "index": i, "embedding": [float(len(t)), 0.5, -0.25]}
                for i, t in enumerate(texts)
            ]
            usage = {"prompt_tokens": 3 * len(texts), "total_tokens": 3 * len(texts)}
            return JSONResponse(
                {"object": "list", "data": data, "model": MODEL, "usage": usage},
                headers={"x-request-id": "req-embed-1"},
            )

        @app.post("/v1/completions")
        async def completions(request: Request) -> Response:
            raw = await request.body()
            received = Received(
                request.url.path + (f"?{request.url.query}" if request.url.query else ""),
                raw,
                dict(request.headers),
            )
            self.received.append(received)
            words = ["Once", " upon", " a", " time"]

            async def events() -> AsyncIterator[bytes]:
                for word in words:
                    chunk = {"object": "text_completion", "choices": [{"index": 0, "text": word}]}
                    yield f"data: {json.dumps(chunk)}\n\n".encode()
                yield b"data: [DONE]\n\n"
                received.completed = True

            return StreamingResponse(events(), media_type="text/event-stream")

        @app.get("/v1/dashboard/session")
        def session(request: Request) -> Response:
            """A route that sets a cookie, as some gateways do on any answer."""
            self.received.append(Received(request.url.path, b"", dict(request.headers)))
            answer = JSONResponse({"object": "session"})
            answer.set_cookie("upstream_session", SESSION_COOKIE, path="/")
            return answer

        @app.get("/v1/models")
        def models(request: Request) -> Response:
            self.received.append(Received("/v1/models", b"", dict(request.headers)))
            if self.persona == "llamacpp":
                data: dict[str, Any] = {
                    "models": [{"name": MODEL, "model": MODEL, "type": "model"}],
                    "object": "list",
                    "data": [
                        {
                            "id": MODEL,
                            "object": "model",
                            "created": 1795980867,
                            "owned_by": "llamacpp",
                        }
                    ],
                }
            else:
                data = {
                    "object": "list",
                    "data": [{"id": MODEL, "object": "model", "owned_by": "me", "permissions": []}],
                }
            return JSONResponse(data)

        @app.api_route("/{rest:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
        async def unknown(request: Request) -> Response:
            """Any other route: recorded as its path came (undecoded), answered 404."""
            raw = request.scope["raw_path"].decode("latin-1")
            query = request.scope["query_string"].decode("latin-1")
            target = raw + (f"?{query}" if query else "")
            self.received.append(Received(target, await request.body(), dict(request.headers)))
            return JSONResponse(error_body(self.persona, 404, "no such route"), status_code=404)

        return app


def _is_distill(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    return bool(messages) and messages[0].get("content") == DISTILL_PROMPT


async def _paced(events: list[bytes], reply: Reply, received: Received) -> AsyncIterator[bytes]:
    try:
        for n, event in enumerate(events):
            if reply.hang and n == reply.hang_at:
                await asyncio.sleep(reply.hang)
            elif reply.delay:
                await asyncio.sleep(reply.delay)
            if reply.keepalive and n % 2 == 0:
                yield b": keep-alive\n\n"
            yield event
        received.completed = True
    except (asyncio.CancelledError, GeneratorExit):
        received.cancelled = True
        raise


# --- wire formats ------------------------------------------------------------------------


def _arguments(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _finish(reply: Reply) -> str:
    if reply.finish is not None:
        return reply.finish
    return "tool_calls" if reply.calls else "stop"


def _usage() -> dict[str, int]:
    return {"prompt_tokens": 21, "completion_tokens": 7, "total_tokens": 28}


def completion_bytes(persona: str, reply: Reply) -> bytes:
    now = int(time.time())
    calls = [
        {
            "id": f"call_{uuid.uuid4().hex[:12]}",
            "type": "function",
            "function": {"name": name, "arguments": _arguments(args)},
        }
        for name, args in reply.calls
    ]
    if persona == "llamacpp":
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if calls:
            message["tool_calls"] = calls
        body: dict[str, Any] = {
            "choices": [{"finish_reason": _finish(reply), "index": 0, "message": message}],
            "created": now,
            "model": MODEL,
            "system_fingerprint": "b1-0c1e570",
            "object": "chat.completion",
            "usage": {**_usage(), "prompt_tokens_details": {"cached_tokens": 0}},
            "id": f"chatcmpl-{uuid.uuid4().hex[:32]}",
            "timings": {
                "cache_n": 0,
                "prompt_n": 21,
                "prompt_ms": 178.3,
                "predicted_n": 7,
                "predicted_ms": 69.4,
            },
        }
        return json.dumps(body, separators=(",", ":")).encode()
    if persona == "lcp":
        chat_id = f"chatcmpl-{uuid.uuid4()}"
        message = {"content": reply.content if not calls else None, "role": "assistant"}
        if calls:
            message = {
                "content": None,
                "tool_calls": calls,
                "role": "assistant",
                "function_call": calls[0]["function"],
            }
    else:
        chat_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        message = {
            "role": "assistant",
            "content": reply.content if reply.content or not calls else "",
        }
        if persona == "openai":
            message["refusal"] = None
            if calls:
                message["content"] = reply.content
        if calls:
            message["tool_calls"] = calls
    body = {
        "id": chat_id,
        "object": "chat.completion",
        "created": now,
        "model": MODEL,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(reply)}
        ],
        "usage": _usage(),
    }
    if persona in ("openai", "ollama"):
        body["system_fingerprint"] = "fp_ollama" if persona == "ollama" else "fp_44709d6fcb"
    return json.dumps(body, separators=(",", ":")).encode()


def _fragments(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _words(text: str) -> list[str]:
    out: list[str] = []
    for n, word in enumerate(text.split(" ")):
        out.append(word if n == 0 else " " + word)
    return out


def stream_events(persona: str, reply: Reply, include_usage: bool) -> list[bytes]:
    chunk_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
    now = int(time.time())
    spaced = persona == "lcp"  # llama-cpp-python writes JSON with ", " and ": "

    def event(obj: dict[str, Any]) -> bytes:
        text = json.dumps(obj) if spaced else json.dumps(obj, separators=(",", ":"))
        return b"data: " + text.encode() + b"\n\n"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        if persona == "llamacpp":
            return {
                "choices": [{"finish_reason": finish, "index": 0, "delta": delta}],
                "created": now,
                "id": chunk_id,
                "model": MODEL,
                "system_fingerprint": "b1-0c1e570",
                "object": "chat.completion.chunk",
            }
        if persona == "lcp":
            return {
                "id": chunk_id,
                "object": "chat.completion.chunk",
                "created": now,
                "model": MODEL,
                "choices": [
                    {"index": 0, "finish_reason": finish, "logprobs": None, "delta": delta}
                ],
            }
        out: dict[str, Any] = {
            "id": chunk_id,
            "object": "chat.completion.chunk",
            "created": now,
            "model": MODEL,
        }
        if persona == "openai":
            out["system_fingerprint"] = "fp_44709d6fcb"
        if persona == "ollama":
            out["system_fingerprint"] = "fp_ollama"
        choice: dict[str, Any] = {"index": 0, "delta": delta}
        if persona != "ollama":
            choice["logprobs"] = None
        choice["finish_reason"] = finish
        out["choices"] = [choice]
        if persona == "openai" and include_usage:
            out["usage"] = None
        return out

    def ping() -> bytes:
        return event(
            {
                "id": "",
                "object": "",
                "created": 0,
                "model": "",
                "choices": [],
                "prompt_filter_results": [],
            }
        )

    events: list[bytes] = []
    if reply.ping:
        events.append(ping())
    first = {
        "openai": {"role": "assistant", "content": "", "refusal": None},
        "vllm": {"role": "assistant", "content": ""},
        "llamacpp": {"role": "assistant", "content": None},
        "lcp": {"role": "assistant"},
        "ollama": {"role": "assistant", "content": ""},
    }[persona]
    if persona == "lcp" and reply.calls:
        first = {"role": "assistant", "content": None, "function_call": None, "tool_calls": None}
    if persona != "ollama" or not reply.content:
        events.append(event(chunk(first)))
    if reply.content:
        for n, word in enumerate(_words(reply.content)):
            delta = {"content": word}
            if persona == "ollama" and n == 0:
                delta = {"role": "assistant", "content": word}
            events.append(event(chunk(delta)))
            if reply.ping and n == 1:
                events.append(ping())
    for index, (name, args) in enumerate(reply.calls):
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        arguments = _arguments(args)
        if persona == "ollama":
            whole = {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            if not reply.no_index:
                whole = {
                    "id": call_id,
                    "index": index,
                    "type": "function",
                    "function": whole["function"],
                }
            events.append(event(chunk({"role": "assistant", "content": "", "tool_calls": [whole]})))
            continue
        if persona == "lcp":
            lcp_id = f"call__{index}_{name}_{chunk_id}"
            for piece in _fragments(arguments):
                call = {
                    "index": index,
                    "id": lcp_id,
                    "type": "function",
                    "function": {"name": name, "arguments": piece},
                }
                if reply.no_index:
                    del call["index"]
                delta = {
                    "role": None,
                    "content": None,
                    "function_call": {"name": name, "arguments": piece},
                    "tool_calls": [call],
                }
                events.append(event(chunk(delta)))
            continue
        opening: dict[str, Any] = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        if persona == "vllm":
            opening = {
                "id": call_id,
                "type": "function",
                "index": index,
                "function": {"name": name},
            }
        if reply.no_index:
            del opening["index"]
        events.append(event(chunk({"tool_calls": [opening]})))
        for piece in _fragments(arguments):
            part: dict[str, Any] = {"index": index, "function": {"arguments": piece}}
            if reply.no_index:
                del part["index"]
            events.append(event(chunk({"tool_calls": [part]})))
    finish = _finish(reply)
    if persona == "ollama" and reply.calls and reply.finish is None:
        finish = "stop"  # what Ollama sends on a turn with calls
    final_delta: dict[str, Any] = (
        {} if persona != "ollama" else {"role": "assistant", "content": ""}
    )
    events.append(event(chunk(final_delta, finish)))
    if include_usage and persona != "lcp":  # llama-cpp-python never sends usage
        usage_chunk = chunk({})
        usage_chunk["choices"] = []
        usage_chunk["usage"] = _usage()
        if persona == "llamacpp":
            usage_chunk["timings"] = {"cache_n": 0, "prompt_n": 21, "predicted_n": 7}
        events.append(event(usage_chunk))
    events.append(b"data: [DONE]\n\n")
    return events


def error_body(persona: str, status: int, message: str) -> dict[str, Any]:
    if persona == "llamacpp":
        return {"error": {"code": status, "message": message, "type": "server_error"}}
    if persona == "lcp":
        return {
            "error": {
                "message": message,
                "type": "internal_server_error",
                "param": None,
                "code": None,
            }
        }
    if persona == "ollama":
        return {"error": {"message": message, "type": "api_error", "param": None, "code": None}}
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    }
