"""``/ui/traces``: recent recalls and proxied turns, and one of them whole.

A recall shows every candidate with each stage's score and why it was not served; a proxied
turn shows each injection's text rendered again from the log, marked as reproduced when its
digest is the one recorded. The check button replays one recall from the log
(``replay/fidelity.py``) and shows whether the same candidates and scores come out. Each served
memory can be rated there (``recall.feedback``), as ``POST /recalls/{traceId}/feedback`` does,
and the grades given so far are shown beside it.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ..errors import InvalidInput
from ..eventlog.scratch import scratch_root
from ..memory import GRADES, MAX_FEEDBACK_REASON, Core, trust_params
from ..replay.fidelity import TraceCheck, check_traces
from ..runtime import Runtime
from ..views import recent_traces, trace_json, turn_json
from .forms import read_form
from .pages import Pages, see_other

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

    def recall_page(
        request: Request, trace_id: str, check: TraceCheck | None = None, rated: int | None = None
    ) -> Response:
        body = trace_json(core, core.reads.trace(trace_id, pages.caller(request)))
        feedback = body["feedback"]
        assert isinstance(feedback, list)
        confirmed = next((f for f in feedback if f["seq"] == rated), None)
        return pages.render(
            request,
            "trace.html",
            trace=body,
            check=check,
            grades=GRADES,
            max_reason=MAX_FEEDBACK_REASON,
            rated=confirmed,
        )

    @router.get("/ui/traces/{trace_id}")
    def trace(
        request: Request,
        trace_id: str,
        rated: Annotated[int | None, Query(ge=1, le=2**63 - 1)] = None,
    ) -> Response:
        if trace_id.startswith("trn_"):
            body = turn_json(core, core.reads.turn(trace_id, pages.caller(request)))
            return pages.render(request, "turn.html", turn=body)
        return recall_page(request, trace_id, rated=rated)

    @router.post("/ui/traces/{trace_id}/check")
    async def check(request: Request, trace_id: str) -> Response:
        await read_form(request, pages.sessions)
        core.reads.trace(trace_id, pages.caller(request))  # out of reach: no replay either
        result = await run_in_threadpool(_check, runtime, trace_id)
        return recall_page(request, trace_id, check=result)

    @router.post("/ui/traces/{trace_id}/feedback")
    async def feedback(request: Request, trace_id: str) -> Response:
        form = await read_form(request, pages.sessions)
        caller = pages.caller(request)
        grade = form.get("grade", "")
        if not grade.isdigit():
            raise InvalidInput(f"choose a grade from 0 to {max(GRADES)}")
        # A form always sends its text box: left empty, it says no reason.
        reason = form.get("reason", "").strip() or None
        rated = await run_in_threadpool(
            lambda: core.usage.feedback(
                trace_id,
                caller,
                "rest",
                version_id=form.get("versionId", ""),
                grade=int(grade),
                reason=reason,
            )
        )
        return see_other(f"/ui/traces/{trace_id}?rated={rated.seq}")

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
