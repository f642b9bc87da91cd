"""/inspect: the receipts. A recall's trace is a fold over its recall event; a proxied turn's
over its turn event, the injections it made and its capture decision."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from ..runtime import Runtime
from ..views import recent_traces, trace_json, turn_json
from ..web.caller import caller_in


def inspect_routes(runtime: Runtime) -> APIRouter:
    router = APIRouter()
    core = runtime.core

    @router.get("/inspect")
    def recent(
        request: Request,
        container_tag: Annotated[str | None, Query(alias="containerTag", max_length=256)] = None,
        origin: Annotated[str | None, Query(max_length=32)] = None,
        kind: Annotated[
            Literal["recall", "turn"] | None,
            Query(alias="type", description="only recalls, or only proxied turns"),
        ] = None,
        before: Annotated[
            # At most SQLite's largest integer: a larger one was a 500 (OverflowError).
            int | None, Query(ge=1, le=2**63 - 1, description="only traces before this seq")
        ] = None,
        limit: Annotated[int, Query(ge=1, le=200)] = 20,
    ) -> JSONResponse:
        """Recent recalls and proxied turns, newest first (by log seq)."""
        caller = caller_in(request.scope)
        caller.reach(container_tag)
        found = recent_traces(
            core,
            caller,
            container_tag=container_tag,
            origin=origin,
            kind=kind,
            before=before,
            limit=limit,
        )
        return JSONResponse({"traces": found})

    @router.get("/inspect/{trace_id}")
    def one(trace_id: str, request: Request) -> JSONResponse:
        caller = caller_in(request.scope)
        if trace_id.startswith("trn_"):
            return JSONResponse(turn_json(core, core.reads.turn(trace_id, caller)))
        # A trace over every container may hold any of them: only an unscoped key sees it.
        return JSONResponse(trace_json(core, core.reads.trace(trace_id, caller)))

    return router
