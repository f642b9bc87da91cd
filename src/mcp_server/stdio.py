"""stdio: the server of ``server.py`` for a client that launches it, on its own data dir, or
relayed to the running server that owns that data dir.

Standard output carries the protocol only: while the store boots it points at standard error,
and while serving the SDK's transport keeps it for itself.

A data dir has one owner (its lock). When ``mnemolog serve`` holds it, this process cannot
open the store, so it relays: every request it reads goes, through the SDK's own client, to
that server's ``/mcp`` endpoint, and every answer comes back. The calls are then served, and
recorded with protocol ``mcp``, by the one process that owns the store.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from ..errors import DataDirLocked
from ..runtime import Runtime
from ..settings import Settings
from .server import build_server

Ctx = ServerRequestContext[Any]
T = TypeVar("T")


class ServerUnreachable(Exception):
    """The data dir is locked, and the server at the address to relay to cannot be used: none
    answers there, or it refused the relay (``why``)."""

    def __init__(self, locked: DataDirLocked, url: str, why: str | None = None) -> None:
        if why is None:
            super().__init__(f"{locked}; and no mnemolog server answers at {url}")
        else:
            super().__init__(f"{locked}; a mnemolog server answers at {url}, but {why}")
        self.url = url


async def refusal(url: str, key: str | None) -> str | None:
    """Why the server at ``url`` would not relay, when it answers at all (None: it does not):
    read off its ``/health``, which stays open whatever its keys."""
    health = url.rsplit("/mcp", 1)[0] + "/health"
    try:
        async with httpx2.AsyncClient(timeout=5.0) as client:
            answer = await client.get(health)
        auth = answer.json().get("auth")
    except (httpx2.HTTPError, ValueError, AttributeError):
        return None
    if auth == "required" and key is None:
        return "it needs an API key: set MNEMOLOG_MCP_API_KEY to one (mnemolog keys add NAME)"
    if auth == "required":
        return "it refused the key in MNEMOLOG_MCP_API_KEY (revoked, or another store's)"
    return "its MCP endpoint did not accept the connection"


def server_url(settings: Settings) -> str:
    """Where ``mnemolog serve`` with these settings answers MCP: its host and port, with a
    wildcard bind reached on loopback."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(settings.host, settings.host)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{settings.port}/mcp"


async def run_stdio(settings: Settings) -> None:
    """Serve MCP on standard input and output until the client closes them (or a signal).

    Raises, before serving anything, what kept it from serving: ``ServerUnreachable``, or
    the error that kept the store from opening."""
    async with AsyncExitStack() as stack:
        with _stdout_to_stderr():  # what booting prints must not reach the protocol stream
            try:
                runtime = await anyio.to_thread.run_sync(Runtime, settings)
            except DataDirLocked as locked:
                url = server_url(settings)
                remote = await stack.enter_async_context(_remote(url, locked, settings.mcp_api_key))
                server, close = relay_server(remote, url), _nothing
            else:
                stack.callback(runtime.close)  # however serving ends, the indexes are saved
                server, close = build_server(runtime.core, runtime.settings), runtime.close
                gc.freeze()  # as ``serve`` does: what boot loaded need not be scanned again
        await _serve_stdio(server, close)


async def _serve_stdio(server: Server[Any], close: Callable[[], None]) -> None:
    async with stdio_server() as (read, write):
        serving = server.run(read, write, server.create_initialization_options())
        if await _until_signal(serving):
            # The transport reads standard input on a thread that no cancellation reaches,
            # and would wait for the client to close it: a signal ends the process here,
            # once the calls in flight have ended (their threads are waited for) and the
            # store is closed.
            close()
            sys.stderr.flush()
            os._exit(0)


def _nothing() -> None:
    """A relay holds nothing to close: the store is the server's."""


@contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


@asynccontextmanager
async def _remote(url: str, locked: DataDirLocked, key: str | None) -> AsyncIterator[Client]:
    """The SDK's client of the server at ``url``, connected (or ``ServerUnreachable``); it
    sends ``key`` (``MNEMOLOG_MCP_API_KEY``) when there is one."""
    async with AsyncExitStack() as held:
        if key is None:
            remote = Client(url, cache=None)
        else:
            # The SDK's own timeouts for its transports (a response stream may stay open).
            http = await held.enter_async_context(
                httpx2.AsyncClient(
                    headers={"authorization": f"Bearer {key}"},
                    timeout=httpx2.Timeout(30.0, read=300.0),
                )
            )
            remote = Client(streamable_http_client(url, http_client=http), cache=None)
        try:
            await remote.__aenter__()
        except Exception as exc:
            raise ServerUnreachable(locked, url, await refusal(url, key)) from exc
        # Entered by hand, to tell a failed connection from a failure after it; so exited by
        # hand, in the same task and scope it was entered in.
        try:
            yield remote
        except BaseException as exc:
            await remote.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        await remote.__aexit__(None, None, None)


async def _until_signal(serving: Awaitable[None]) -> bool:
    """Await ``serving``, or stop it at SIGTERM, SIGINT or SIGHUP (and say so), so the store
    is closed, its indexes saved, however the client ends this process."""
    signalled = False

    async def watch(scope: anyio.CancelScope) -> None:
        nonlocal signalled
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async for _ in signals:
                signalled = True
                scope.cancel()
                return

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(watch, tasks.cancel_scope)
        await serving
        tasks.cancel_scope.cancel()
    return signalled


def relay_server(remote: Client, url: str) -> Server[Any]:
    """A server that answers each request with the remote server's answer to it."""

    async def forward(call: Callable[[], Awaitable[T]]) -> T:
        try:
            return await call()
        except MCPError:
            raise  # the remote's own protocol error, passed on as it came
        except Exception as exc:
            message = f"the mnemolog server at {url} did not answer: {exc}"
            raise MCPError(code=types.INTERNAL_ERROR, message=message) from exc

    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> Any:
        return await forward(lambda: remote.list_tools(cursor=_cursor(params)))

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> Any:
        return await forward(lambda: remote.call_tool(params.name, params.arguments))

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> Any:
        return await forward(lambda: remote.list_resources(cursor=_cursor(params)))

    async def list_templates(ctx: Ctx, params: types.PaginatedRequestParams | None) -> Any:
        return await forward(lambda: remote.list_resource_templates(cursor=_cursor(params)))

    async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> Any:
        return await forward(lambda: remote.read_resource(params.uri))

    async def list_prompts(ctx: Ctx, params: types.PaginatedRequestParams | None) -> Any:
        return await forward(lambda: remote.list_prompts(cursor=_cursor(params)))

    async def get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> Any:
        return await forward(lambda: remote.get_prompt(params.name, params.arguments))

    info = remote.server_info
    return Server(
        info.name if info is not None else "mnemolog",
        version=info.version if info is not None else "",
        title=None if info is None else info.title,
        instructions=remote.instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def _cursor(params: types.PaginatedRequestParams | None) -> str | None:
    return None if params is None else params.cursor
