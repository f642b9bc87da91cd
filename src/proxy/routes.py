"""``POST /v1/chat/completions`` and ``GET /v1/models``: parse, run the turn, render.

A streamed response starts only once the turn's nature is known (its first answer text, or
its end), so its headers tell the truth about the memory round. A client that goes away
cancels the turn, and with it the upstream call.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable
from typing import Any, TypeVar

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from ..errors import MnemologError, UpstreamNotConfigured
from ..web.caller import caller_in
from ..web.statuses import error_body, http_status
from .buffered import answer_text, run_buffered
from .capture import Capture
from .request import read_chat_request
from .streamed import run_streamed
from .turn import Services, Turn
from .upstream import failure_of

T = TypeVar("T")


class ClientGone(Exception):
    """The client closed the connection before its answer was ready."""


def proxy_routes(services: Services, capture: Capture) -> APIRouter:
    router = APIRouter()
    settings = services.settings

    @router.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        chat = await read_chat_request(
            request,
            max_bytes=settings.max_body_bytes,
            default_container=settings.proxy_container_tag,
            default_capture=settings.capture,
        )
        caller = caller_in(request.scope)
        caller.reach(chat.container_tag)
        if not services.upstream.configured:
            raise UpstreamNotConfigured("no upstream is configured: set MNEMOLOG_UPSTREAM_BASE_URL")
        turn = Turn(services, chat, caller.actor("proxy"))
        if chat.capture:
            turn.capture = asyncio.ensure_future(capture.run(turn.turn_id, chat, turn.actor))
        try:
            return await _until_disconnected(request, _answer(turn))
        except ClientGone:
            return Response(status_code=499)
        except MnemologError as exc:
            return JSONResponse(
                error_body(exc),
                status_code=http_status(exc),
                headers=turn.headers(),
            )

    async def _answer(turn: Turn) -> Response:
        await turn.prepare()
        if not turn.request.stream:
            try:
                completion = await run_buffered(turn)
            except MnemologError as exc:
                await turn.finish("upstream_error", http_status(exc), None)
                raise
            except asyncio.CancelledError:
                turn.finish_now("cancelled", 499, None)
                raise
            await turn.finish(
                "client_tools"
                if completion["choices"][0]["message"].get("tool_calls")
                else "answer",
                200,
                answer_text(completion),
            )
            return JSONResponse(completion, headers=turn.headers())
        events = run_streamed(turn)
        try:
            first = await anext(events)
        except MnemologError as exc:
            await turn.finish("upstream_error", http_status(exc), None)
            raise
        return _ProxyStream(_prepend(first, events), headers=turn.headers())

    @router.get("/v1/models")
    async def models() -> Response:
        response = await services.upstream.get_models()
        if not 200 <= response.status_code < 300:
            raise failure_of(response.status_code, response.content)
        return Response(
            content=response.content,
            status_code=response.status_code,
            media_type="application/json",
        )

    return router


async def _prepend(first: bytes, rest: AsyncGenerator[bytes]) -> AsyncGenerator[bytes]:
    try:
        yield first
        async for item in rest:
            yield item
    finally:
        await rest.aclose()


class _ProxyStream(StreamingResponse):
    """Streams while listening for the client to go away, whatever the ASGI version: a gone
    client cancels the stream, which closes the upstream connection."""

    media_type = "text/event-stream"

    def __init__(self, content: AsyncIterator[bytes], headers: dict[str, str]) -> None:
        super().__init__(
            content,
            headers={**headers, "cache-control": "no-cache", "x-accel-buffering": "no"},
            media_type="text/event-stream",
        )
        self._content = content

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def stream() -> None:
            with contextlib.suppress(OSError):  # the client went away while we wrote
                await self.stream_response(send)
            group.cancel_scope.cancel()

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(stream)
                await self.listen_for_disconnect(receive)
                group.cancel_scope.cancel()
        finally:
            aclose = getattr(self._content, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()


async def _until_disconnected(request: Request, work: Awaitable[T]) -> T:
    """Run ``work`` unless the client disconnects first; then cancel it."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(_disconnect(request))
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not task.done() and not watch.done():  # we were cancelled ourselves
            task.cancel()
            watch.cancel()
    if task.done():
        watch.cancel()
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    raise ClientGone()


async def _disconnect(request: Request) -> None:
    while True:
        message: Any = await request.receive()
        if message["type"] == "http.disconnect":
            return
