"""Streamable HTTP: the server of ``server.py`` as an ASGI app the API mounts at ``/mcp``.

Answers are JSON, not event streams: no tool pushes anything to a client before its answer.
Clients of the 2026-07-28 revision need no session; those of the 2025 handshake get one (the
SDK's default), which is cheaper per call than a stateless server building a transport for
every request (about 0.7 ms of the 2 ms a small call takes on the development machine). The
SDK's own Host/Origin check is off: the API's guard (``web/host_guard.py``) stands in front of
every route, ``/mcp`` included, so one policy and one setting decide who may call.

Two answers of the SDK's are mended on the way. A GET that asks to resume a stream
(``Last-Event-ID``) is served a new one: no event is kept to replay, and the SDK, asked to
replay with nothing kept, returned without answering (a 500). And its refusals at the HTTP
layer (a Content-Type that is not JSON, a method a protocol revision does not serve, a body too
large), in plain text or with no body, carry the error body every route answers with; its
JSON-RPC errors go as it sent them.

The SDK is imported and its session manager started at the first ``/mcp`` request, not at
start: importing it is about a third of a server's start (1.1 s of 3.5 s measured), paid by
every server, most of which are never called over MCP.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http import HTTPStatus
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import anyio.to_thread
import msgspec
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..settings import Settings

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from ..memory import Core

PATH = "/mcp"
# The code of a refusal the SDK answers without an error body, by its status.
_CODES = {
    400: "invalid_input",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


class McpHttp:
    """Answers ``/mcp`` in front of another app; it serves only while ``running()`` is
    entered (in the API's lifespan), which owns the tasks of the calls in flight."""

    def __init__(self, core: Core, settings: Settings) -> None:
        self._core = core
        self._settings = settings
        self._app: ASGIApp | None = None
        self._starting = anyio.Lock()
        self._group: anyio.abc.TaskGroup | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()  # ends the session manager, if it was started

    def in_front_of(self, app: ASGIApp) -> ASGIApp:
        """``app``, with ``/mcp`` answered before it: an MCP call skips the framework's routes
        and middleware (the MCP server has its own), as the hot routes do (``api/hot.py``)."""

        async def dispatch(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and scope["path"] == PATH:
                mcp = self._app or await self._started()
                await mcp(_without_resumption(scope), receive, _json_refusals(send))
            else:
                await app(scope, receive, send)

        return dispatch

    async def _started(self) -> ASGIApp:
        async with self._starting:
            if self._app is None:
                group = self._group
                if group is None:
                    raise RuntimeError("MCP over HTTP is served only while the API runs")
                # Imported off the event loop: other requests go on meanwhile.
                manager, app = await anyio.to_thread.run_sync(self._build)
                await group.start(self._serve, manager)
                self._app = app
            return self._app

    def _build(self) -> tuple[StreamableHTTPSessionManager, ASGIApp]:
        from mcp.server.streamable_http_manager import (
            StreamableHTTPASGIApp,
            StreamableHTTPSessionManager,
        )
        from mcp.server.transport_security import TransportSecuritySettings

        from .server import build_server

        manager = StreamableHTTPSessionManager(
            app=build_server(self._core, self._settings),
            json_response=True,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=self._settings.max_body_bytes,
        )
        return manager, StreamableHTTPASGIApp(manager)

    @staticmethod
    async def _serve(
        manager: StreamableHTTPSessionManager,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        async with manager.run():
            task_status.started()
            await anyio.sleep_forever()


def _without_resumption(scope: Scope) -> Scope:
    """The request without ``Last-Event-ID``: no event is kept, so there is nothing to resume."""
    headers = scope["headers"]
    if all(name != b"last-event-id" for name, _ in headers):
        return scope
    return {**scope, "headers": [(n, v) for n, v in headers if n != b"last-event-id"]}


def _json_refusals(send: Send) -> Send:
    """``send``, with a 4xx that is not JSON held back and answered with the error body (its
    message the SDK's text)."""
    held: Message | None = None
    text = b""

    async def sending(message: Message) -> None:
        nonlocal held, text
        if message["type"] == "http.response.start" and _plain_refusal(message):
            held = message
            return
        if held is None or message["type"] != "http.response.body":
            await send(message)
            return
        text += message.get("body", b"")
        if message.get("more_body", False):
            return
        status: int = held["status"]
        said = text.decode("utf-8", "replace").strip() or HTTPStatus(status).phrase
        body = msgspec.json.encode(
            {"error": {"code": _CODES.get(status, "http_error"), "message": said}}
        )
        headers = [
            *((k, v) for k, v in held["headers"] if k not in (b"content-type", b"content-length")),
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(body)),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return sending


def _plain_refusal(start: Message) -> bool:
    if not 400 <= start["status"] < 500:
        return False
    kind = next((v for k, v in start["headers"] if k.lower() == b"content-type"), b"")
    return not kind.lower().startswith(b"application/json")
