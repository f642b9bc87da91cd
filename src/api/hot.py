"""The hottest routes, served beneath the framework.

``POST /memories`` and ``POST /search`` are most of an agent's traffic. Through FastAPI each
request crossed about a dozen middleware and routing layers before reaching its handler (more
than the handler's own work for a one-memory write). Here the ASGI scope of those two routes is
answered directly: the same header checks, refusal of query parameters, body limit, strict
decoding, handlers and error shape as every other route (the handlers are shared with the
framework's routes, which still describe them in the OpenAPI document), with less per-request
machinery.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from urllib.parse import parse_qsl

import msgspec
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import MnemologError
from ..web.request_body import BodyBuffer, check_json_headers
from ..web.statuses import error_body, http_status
from .query import refuse_unknown

App = ASGIApp

_encode = msgspec.json.Encoder().encode


class Reply(msgspec.Struct, frozen=True):
    """A JSON answer: its status, its body (anything msgspec encodes) and extra headers."""

    body: object
    status: int = 200
    headers: Mapping[str, str] = msgspec.field(default_factory=dict)

    def encoded(self) -> bytes:
        return _encode(self.body)


Handler = Callable[[bytes, Scope], Awaitable[Reply]]  # the body and the request's scope


def error_reply(exc: MnemologError) -> Reply:
    return Reply(error_body(exc), status=http_status(exc))


class HotRoutes:
    """ASGI middleware: ``(method, path)`` in ``routes`` is answered by its handler, anything
    else goes on to ``app``."""

    def __init__(self, app: App, routes: Mapping[tuple[str, str], Handler], *, max_body: int):
        self._app = app
        self._routes = dict(routes)
        self._max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = (
            self._routes.get((scope["method"], scope["path"])) if scope["type"] == "http" else None
        )
        if handler is None:
            await self._app(scope, receive, send)
            return
        try:
            if scope["query_string"]:  # they take none: one sent is refused, as on every route
                sent = parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True)
                refuse_unknown((name for name, _ in sent), set())
            raw = await self._body(scope, receive)
            if raw is None:
                return  # the client went away before sending its body
            reply = await handler(raw, scope)
        except MnemologError as exc:
            reply = error_reply(exc)
        await _send(send, reply)

    async def _body(self, scope: Scope, receive: Receive) -> bytes | None:
        content_type = content_length = None
        for name, value in scope["headers"]:
            if name == b"content-type":
                content_type = value.decode("latin-1")
            elif name == b"content-length":
                content_length = value.decode("latin-1")
        check_json_headers(content_type, content_length, self._max_body)
        body = BodyBuffer(self._max_body)
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body.add(message.get("body", b""))
            if not message.get("more_body", False):
                return body.bytes()


async def _send(send: Send, reply: Reply) -> None:
    content = reply.encoded()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(content)).encode()),
    ]
    headers.extend((k.encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers.items())
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": content})
