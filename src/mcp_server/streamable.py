"""Streamable HTTP: the server of ``server.py`` as an ASGI app the API mounts at ``/mcp``.

Answers are JSON, not event streams: no tool pushes anything to a client before its answer.
Clients of the 2026-07-28 revision need no session; those of the 2025 handshake get one (the
SDK's default), which is cheaper per call than a stateless server building a transport for
every request (about 0.7 ms of the 2 ms a small call takes on the development machine). The
SDK's own Host/Origin check is off: the API's guard (``web/host_guard.py``) stands in front of
every route, ``/mcp`` included, so one policy and one setting decide who may call.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from ..memory import Core
from ..settings import Settings
from .server import build_server

PATH = "/mcp"


class McpHttp:
    """``app`` answers ``/mcp``; it serves only while ``running()`` is entered (in the API's
    lifespan), which owns the tasks of the calls in flight."""

    def __init__(self, core: Core, settings: Settings) -> None:
        self._manager = StreamableHTTPSessionManager(
            app=build_server(core, settings),
            json_response=True,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=settings.max_body_bytes,
        )
        self.app = StreamableHTTPASGIApp(self._manager)

    def running(self) -> AbstractAsyncContextManager[None]:
        return self._manager.run()

    def in_front_of(self, app: ASGIApp) -> ASGIApp:
        """``app``, with ``/mcp`` answered before it: an MCP call skips the framework's routes
        and middleware (the MCP server has its own), as the hot routes do (``api/hot.py``)."""
        mcp = self.app

        async def dispatch(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and scope["path"] == PATH:
                await mcp(scope, receive, send)
            else:
                await app(scope, receive, send)

        return dispatch
