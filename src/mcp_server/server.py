"""The one MCP server definition, served over stdio (``stdio.py``) and streamable HTTP
(``http.py``) alike: the tools, resources and prompts over one core.

A failing tool answers a tool error (``isError``), never a protocol error, so the model sees
what went wrong: its structured content is the REST API's error body,
``{"error": {"code", "message"}}``, with the same code and message REST answers for the
same input. Resources and prompts have no error results, so theirs are JSON-RPC errors that
carry that body as their ``data``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread
import mcp_types as types
import msgspec
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from .. import __version__
from ..errors import InvalidInput, MnemologError, NotFound
from ..memory import Caller, Core
from ..memory.agents import LOCAL
from ..settings import Settings
from ..web.caller import caller_in
from ..web.statuses import error_body
from .prompts import PROMPTS, prompt
from .resources import TEMPLATES, MemoryResources
from .tools import MemoryTools

log = logging.getLogger("mnemolog.mcp")

RESOURCE_NOT_FOUND = -32002  # the code the MCP specification gives a missing resource

INSTRUCTIONS = (
    "mnemolog is the user's long-term memory. Search it (search_memories) before answering "
    "anything that may depend on what the user said before, and save the durable facts they "
    "state (add_memory), one per call. After using search results, report which ones "
    "(memory_used), and grade a result that was clearly the answer or clearly wrong "
    "(rate_result). Every call is recorded, and each search can be inspected."
)

Ctx = ServerRequestContext[Any]
T = TypeVar("T")

_encode = msgspec.json.Encoder().encode


def build_server(core: Core, settings: Settings) -> Server[Any]:
    tools = MemoryTools(
        core,
        hard_delete=settings.mcp_hard_delete,
        rerank=settings.agent_rerank,
        rerank_pool=settings.agent_rerank_pool,
    )
    resources = MemoryResources(core)
    listed_tools = [spec.tool() for spec in tools.specs]
    schemas = {tool.name: tool.input_schema for tool in listed_tools}

    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> Any:
        return types.ListToolsResult(tools=listed_tools)

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> Any:
        tool = tools.get_tool(params.name)
        if tool is None:  # a protocol error, as the specification asks for an unknown tool
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        arguments, caller = params.arguments, caller_of(ctx)
        try:
            body: object = await anyio.to_thread.run_sync(tool, arguments, caller)
        except MnemologError as exc:
            return _tool_result(error_body(exc), error=True)
        except Exception:
            # A bug, not the caller's fault: the model gets a tool error all the same, and the
            # server goes on serving.
            log.exception("MCP tool %s failed", params.name)
            failure = {"error": {"code": "internal_error", "message": "the tool failed"}}
            return _tool_result(failure, error=True)
        return _tool_result(body, error=False)

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> Any:
        caller = caller_of(ctx)
        return types.ListResourcesResult(
            resources=await _blocking(lambda: resources.listed(caller))
        )

    async def list_templates(ctx: Ctx, params: types.PaginatedRequestParams | None) -> Any:
        return types.ListResourceTemplatesResult(resource_templates=TEMPLATES)

    async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> Any:
        caller = caller_of(ctx)
        body = await _blocking(
            lambda: resources.read(params.uri, caller), missing=RESOURCE_NOT_FOUND
        )
        text = _encode(body).decode()
        contents = types.TextResourceContents(
            uri=params.uri, mime_type="application/json", text=text
        )
        return types.ReadResourceResult(contents=[contents])

    async def list_prompts(ctx: Ctx, params: types.PaginatedRequestParams | None) -> Any:
        return types.ListPromptsResult(prompts=PROMPTS)

    async def get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> Any:
        return await _blocking(lambda: prompt(params.name, params.arguments))

    server: Server[Any] = Server(
        "mnemolog",
        version=__version__,
        title="mnemolog memory",
        instructions=INSTRUCTIONS,
        # Without it, every 2026-revision call over HTTP would list the tools to find one
        # schema (to check the request's Mcp-Param headers against it).
        get_tool_input_schema=schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
    # The SDK's one default middleware is OpenTelemetry's: mnemolog sends no telemetry.
    server.middleware = []
    return server


def caller_of(ctx: Ctx) -> Caller:
    """Who a call is: over HTTP, the caller the key at the door opened (``web/auth.py``), in
    the request's scope; over stdio (a process the user launched, on their own store), the
    local agent."""
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None)
    return caller_in(scope) if isinstance(scope, dict) else LOCAL


def _tool_result(body: object, *, error: bool) -> types.CallToolResult:
    # The JSON also as text: clients that ignore structured content show the text to the model.
    text = types.TextContent(text=_encode(body).decode())
    return types.CallToolResult(content=[text], structured_content=body, is_error=error)


async def _blocking(work: Callable[[], T], *, missing: int = types.INVALID_PARAMS) -> T:
    """Run ``work`` on a worker thread; a mnemolog error becomes a JSON-RPC error (``missing``
    is the code for ``NotFound``)."""
    try:
        return await anyio.to_thread.run_sync(work)
    except MnemologError as exc:
        code = (
            missing
            if isinstance(exc, NotFound)
            else types.INVALID_PARAMS
            if isinstance(exc, InvalidInput)
            else types.INTERNAL_ERROR
        )
        raise MCPError(code=code, message=str(exc), data=error_body(exc)) from exc
