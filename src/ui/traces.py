"""``/ui/traces``: recent recalls and proxied turns, and one of them whole.

A recall shows every candidate with each stage's score and why it was not served; a proxied
turn shows each injection's text rendered again from the log, marked as reproduced when its
digest is the one recorded. The check button replays one recall from the log
(``replay/fidelity.py``) and shows whether the same candidates and scores come out.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ..eventlog.scratch import scratch_root
from ..memory import Core, trust_params
from ..replay.fidelity import TraceCheck, check_traces
from ..runtime import Runtime
from ..views import recent_traces, trace_json, turn_json
from .forms import read_form
from .pages import Pages

PAGE = 50  # traces a list page shows


def trace_pages(runtime: Runtime, pages: Pages) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    core: Core = runtime.core

    @router.get("/ui/traces")
    def traces(
        request: Request,
        container: Annotated[str | None, Query(max_length=256)] = None,
        before: Annotated[int | None, Query(ge=1, le=2**63 - 1)] = None,
    ) -> Response:
        caller = pages.caller(request)
        tag = container or (sorted(caller.containers)[0] if caller.containers else None)
        # One more than a page: whether an older page exists.
        found = recent_traces(core, caller, container_tag=tag, before=before, limit=PAGE + 1)
        shown = found[:PAGE]
        older = shown[-1]["seq"] if len(found) > PAGE else None  # the next page's `before`
        return pages.render(
            request,
            "traces.html",
            traces=shown,
            container=tag,
            containers=core.reads.containers(caller),
            older=older,
        )

    @router.get("/ui/traces/{trace_id}")
    def trace(request: Request, trace_id: str) -> Response:
        caller = pages.caller(request)
        if trace_id.startswith("trn_"):
            body = turn_json(core, core.reads.turn(trace_id, caller))
            return pages.render(request, "turn.html", turn=body)
        body = trace_json(core, core.reads.trace(trace_id, caller))
        return pages.render(request, "trace.html", trace=body, check=None)

    @router.post("/ui/traces/{trace_id}/check")
    async def check(request: Request, trace_id: str) -> Response:
        await read_form(request, pages.sessions)
        caller = pages.caller(request)
        body = trace_json(core, core.reads.trace(trace_id, caller))
        result = await run_in_threadpool(_check, runtime, trace_id)
        return pages.render(request, "trace.html", trace=body, check=result)

    return router


def _check(runtime: Runtime, trace_id: str) -> TraceCheck | None:
    """Replay one recall from the log, with the embedder and reranker the server runs."""
    report = check_traces(
        runtime.log,
        runtime.sealer,
        runtime.core.embedder,
        scratch_root(runtime.settings.data_dir),
        only=[trace_id],
        reranker=runtime.reranker,
        trust=trust_params(runtime.settings),
    )
    return report.traces[0] if report.traces else None
