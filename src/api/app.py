"""The ASGI application: the hot routes in front of a FastAPI app, a thin shell over the runtime."""

from __future__ import annotations

from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from functools import partial

from fastapi import Depends, FastAPI
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp

from .. import __version__
from ..mcp_server.streamable import PATH as MCP_PATH
from ..mcp_server.streamable import McpHttp
from ..memory.agents import LOCAL as LOCAL_CALLER
from ..proxy import Capture, RecallTool, Services, Upstream, proxy_routes
from ..proxy.passthrough import passthrough_routes
from ..runtime import Runtime
from ..serving import remove_address
from ..ui import error_page, ui_routes
from ..web.access_log import AccessLog, access_logger
from ..web.auth import BearerAuth
from ..web.caller import CALLER_STATE
from ..web.host_guard import HostGuard
from ..web.metrics import RequestMetrics
from ..web.sessions import Sessions, session_token
from .agent_routes import agent_routes
from .audit_routes import audit_routes
from .errors import install_error_handlers
from .hot import HotRoutes
from .inspect import inspect_routes
from .metrics_routes import metrics_routes
from .openapi import with_bodies
from .oversight_routes import oversight_routes
from .portability_routes import portability_routes
from .query import known_query_only
from .ranker_routes import ranker_routes
from .reference import serve_reference
from .routes import HotEndpoints, memory_routes
from .stats_routes import stats_routes

API_THREADS = 64


def create_app(runtime: Runtime) -> ASGIApp:
    """The ASGI application: the Host/Origin guard, then the hot routes (``hot.py``), in front
    of the FastAPI app."""
    settings = runtime.settings
    upstream = Upstream(settings)
    # Writes wait on these threads for their durable append: enough of them that concurrent
    # writers queue in the write combiner (and share a batch), not for a thread.
    executor = ThreadPoolExecutor(max_workers=API_THREADS, thread_name_prefix="mnemolog-api")
    hot = HotEndpoints(runtime, executor)
    mcp = McpHttp(runtime.core, settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # The MCP calls run in tasks of its own: they end here, before the store closes.
        async with mcp.running():
            yield
        await upstream.aclose()
        executor.shutdown(wait=True)
        # Here, not after uvicorn returns: on SIGTERM uvicorn re-raises the signal once it
        # has shut down, which would end the process before the indexes are saved.
        remove_address(settings.data_dir)
        runtime.close()

    app = FastAPI(
        title="mnemolog",
        version=__version__,
        openapi_url="/openapi.json",
        docs_url=None,  # served offline by reference.py
        redoc_url=None,
        lifespan=lifespan,
        dependencies=[Depends(known_query_only)],
    )
    serve_reference(app)
    sessions = Sessions()
    pages = ui_routes(app, runtime, sessions)
    install_error_handlers(app, html=partial(error_page, pages))
    app.openapi = with_bodies(app)  # type: ignore[method-assign]
    app.include_router(memory_routes(runtime, hot))
    app.include_router(inspect_routes(runtime))
    app.include_router(portability_routes(runtime))
    app.include_router(audit_routes(runtime))
    app.include_router(agent_routes(runtime))
    app.include_router(oversight_routes(runtime))
    app.include_router(stats_routes(runtime))
    app.include_router(metrics_routes(runtime, runtime.metrics))
    app.include_router(ranker_routes(runtime, settings.max_body_bytes))
    core = runtime.core
    services = Services(
        settings=settings,
        core=core,
        upstream=upstream,
        memory=RecallTool(
            core,
            limit=settings.proxy_recall_limit,
            timeout=settings.proxy_recall_timeout,
            min_trust=settings.proxy_min_trust,
        ),
    )
    capture = Capture(core.writes, upstream, distill=settings.capture_distill)
    app.include_router(proxy_routes(services, capture))
    # After the proxy's own routes: every other /v1/* route goes to the upstream unchanged.
    app.include_router(
        passthrough_routes(
            upstream, settings.max_body_bytes, scoped_keys=settings.proxy_passthrough_scoped
        )
    )

    @app.get("/health")
    def health() -> JSONResponse:
        failure = runtime.log.failure
        error = None if failure is None else {"code": failure.code, "message": str(failure)}
        body = {
            "ok": failure is None,
            "service": "mnemolog",
            "version": __version__,
            "auth": "required" if core.agents.required else "none",
            "log": {
                "head": runtime.log.head().seq,
                "writable": failure is None,
                "error": error,
            },
        }
        return JSONResponse(body, status_code=200 if failure is None else 503)

    routes = {("POST", "/memories"): hot.write_memories, ("POST", "/search"): hot.search}
    # /mcp is answered in front of the framework too: the MCP server has its own routing.
    served = HotRoutes(mcp.in_front_of(app), routes, max_body=settings.max_body_bytes)
    # Once a key is live, a request without one runs nothing (``web/auth.py``).
    keyed = BearerAuth(
        served,
        required=lambda: core.agents.required,
        authenticate=core.agents.authenticate,
        anonymous=LOCAL_CALLER,
        state_key=CALLER_STATE,
        admits=core.agents.admits,
        session=lambda scope: sessions.caller(token) if (token := session_token(scope)) else None,
        login_page="/ui/login",
    )
    # No route, hot or mounted, runs for a request through the wrong door.
    guarded = HostGuard.from_settings(keyed, settings)
    # Around the door, so that its refusals are counted too.
    fixed = [*(path for _, path in routes), MCP_PATH]  # answered in front of the framework
    counted = RequestMetrics(guarded, runtime.metrics, fixed=fixed)
    # Outermost, so a refusal at the door is logged as well.
    return AccessLog(counted, access_logger()) if settings.access_log else counted
