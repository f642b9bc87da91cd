"""The FastAPI application: a thin shell over the runtime."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from .. import __version__
from ..proxy import Capture, Memory, Services, Upstream, proxy_routes
from ..runtime import Runtime
from .audit_routes import audit_routes
from .errors import install_error_handlers
from .inspect import inspect_routes
from .portability_routes import portability_routes
from .routes import memory_routes


def create_app(runtime: Runtime) -> FastAPI:
    settings = runtime.settings
    upstream = Upstream(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await upstream.aclose()
        # Here, not after uvicorn returns: on SIGTERM uvicorn re-raises the signal once it
        # has shut down, which would end the process before the indexes are saved.
        runtime.close()

    app = FastAPI(
        title="mnemolog", version=__version__, openapi_url="/openapi.json", lifespan=lifespan
    )
    install_error_handlers(app)
    app.include_router(memory_routes(runtime))
    app.include_router(inspect_routes(runtime))
    app.include_router(portability_routes(runtime))
    app.include_router(audit_routes(runtime))
    core = runtime.core
    services = Services(
        settings=settings,
        log=runtime.log,
        sealer=runtime.sealer,
        runner=core.runner,
        upstream=upstream,
        memory=Memory(
            core, limit=settings.proxy_recall_limit, timeout=settings.proxy_recall_timeout
        ),
    )
    capture = Capture(core.lifecycle, upstream, distill=settings.capture_distill)
    app.include_router(proxy_routes(services, capture))

    @app.get("/health")
    def health() -> JSONResponse:
        failure = runtime.log.failure
        error = None if failure is None else {"code": failure.code, "message": str(failure)}
        body = {
            "ok": failure is None,
            "service": "mnemolog",
            "version": __version__,
            "auth": "none",
            "log": {
                "head": runtime.log.head().seq,
                "writable": failure is None,
                "error": error,
            },
        }
        return JSONResponse(body, status_code=200 if failure is None else 503)

    return app
