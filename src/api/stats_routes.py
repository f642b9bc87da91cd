"""``GET /stats``: how much a store (or one container of it) holds, in one answer.

The memory counts are the dashboard's (``MemoryQueries.browse``, one pass over the versions):
``live`` the latest version of each chain in service, ``superseded`` the versions a later one
replaced, ``forgotten`` the latest of forgotten chains, ``flagged`` the latest versions the
poisoning detector flagged, ``quarantined`` those of quarantined agents. A key scoped to
containers names one of its own, as everywhere.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from ..runtime import Runtime
from ..web.caller import caller_in


def stats_routes(runtime: Runtime) -> APIRouter:
    router = APIRouter()
    core = runtime.core

    @router.get("/stats")
    def stats(
        request: Request,
        container_tag: Annotated[str | None, Query(alias="containerTag", max_length=256)] = None,
    ) -> JSONResponse:
        caller = caller_in(request.scope)
        _, _, counts = core.reads.browse(
            caller, status="live", container_tag=container_tag, limit=1
        )
        _, documents = core.reads.documents(caller, container_tag=container_tag, limit=1)
        containers = (
            len(core.reads.containers(caller))
            if container_tag is None
            else int(container_tag in core.reads.containers(caller))
        )
        return JSONResponse(
            {
                "containerTag": container_tag,
                "containers": containers,
                "memories": counts,
                "documents": documents,
                # What this node's projections have applied of the log: on a log that other
                # nodes share, ``head - applied`` is how far this node trails it.
                "log": {"head": runtime.log.head().seq, "applied": core.runner.position()},
            }
        )

    return router
