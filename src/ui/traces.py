"""``/ui/traces``: recent recalls and proxied turns, and one of them whole.

A recall shows every candidate with each stage's score and why it was not served; a proxied
turn shows each injection's text rendered again from the log, marked as reproduced when its
digest is the one recorded. The check button replays one recall from the log
(``replay/fidelity.py``) and shows whether the same candidates and scores come out. Each served
memory can be rated there (``recall.feedback``), as ``POST /recalls/{traceId}/feedback`` does,
and the grades given so far are shown beside it.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Annotated, NamedTuple

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ..errors import InvalidInput
from ..eventlog.scratch import scratch_root
from ..memory import GRADES, MAX_FEEDBACK_REASON, Caller, Core, trust_params
from ..replay.fidelity import TraceCheck, check_traces
from ..runtime import Runtime
from ..views import recent_traces, trace_json, turn_json
from .forms import read_form
from .pages import Pages, see_other

PAGE = 50  # traces a list page shows
CHECKS = 64  # trace checks kept to be shown again (a reload, Back)


class Outcome(NamedTuple):
    """What became of one candidate, and why, as far as the trace records it."""

    label: str
    because: str = ""


def trace_pages(runtime: Runtime, pages: Pages) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    core: Core = runtime.core
    # The latest checks run, by a random name the page's URL carries after the check.
    checks: OrderedDict[str, tuple[str, TraceCheck | None]] = OrderedDict()
    checks_lock = threading.Lock()

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
        candidates = body["candidates"]
        assert isinstance(candidates, list)
        params = body["params"]
        assert isinstance(params, Mapping)
        return pages.render(
            request,
            "trace.html",
            trace=body,
            outcomes=outcomes(
                candidates, params, served_instead(candidates, pages.caller(request))
            ),
            quarantined=core.quarantine.agents(),
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
        checked: Annotated[str | None, Query(max_length=64)] = None,
    ) -> Response:
        if trace_id.startswith("trn_"):
            body = turn_json(core, core.reads.turn(trace_id, pages.caller(request)))
            return pages.render(request, "turn.html", turn=body)
        with checks_lock:
            found = checks.get(checked or "")
        result = found[1] if found is not None and found[0] == trace_id else None
        return recall_page(request, trace_id, check=result, rated=rated)

    @router.post("/ui/traces/{trace_id}/check")
    async def check(request: Request, trace_id: str) -> Response:
        await read_form(request, pages.sessions)
        core.reads.trace(trace_id, pages.caller(request))  # out of reach: no replay either
        result = await run_in_threadpool(_check, runtime, trace_id)
        # Post/Redirect/Get: a reload shows the result again, and replays nothing.
        name = secrets.token_urlsafe(12)
        with checks_lock:
            checks[name] = (trace_id, result)
            while len(checks) > CHECKS:
                checks.popitem(last=False)
        return see_other(f"/ui/traces/{trace_id}?checked={name}")

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

    def served_instead(
        candidates: Sequence[Mapping[str, object]], caller: Caller
    ) -> dict[str, list[str]]:
        """Of each memory not served though scored above a served one, the served memories
        that may update it (``memory.linked``): recall puts the newer first."""
        lowest = _lowest_served(candidates)
        served = {c.get("id") for c in candidates if c.get("served")}
        found: dict[str, list[str]] = {}
        for c in candidates:
            score, memory_id = _number(c.get("score")), c.get("id")
            if c.get("served") or lowest is None or score is None or score <= lowest:
                continue
            if not isinstance(memory_id, str) or c.get("erased"):
                continue
            links = core.reads.chain(memory_id, caller).links
            newer = [k.memory_id for k in links if k.target_memory_id == memory_id]
            found[str(c["versionId"])] = [m for m in newer if m in served]
        return found

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


def outcomes(
    candidates: Sequence[Mapping[str, object]],
    params: Mapping[str, object],
    newer: Mapping[str, list[str]] | None = None,
) -> list[Outcome]:
    """Each candidate's outcome, with the reason the trace records for one not served: under
    the score or trust floor, placed past the limit by the rerank, or, for one scored higher
    than a served candidate, the newer memory served in its place (``newer``, by version id)
    or else the stages that order the answer after scoring."""
    limit = params.get("limit")
    lowest = _lowest_served(candidates)
    reorder = _reordering(params)
    found: list[Outcome] = []
    for c in candidates:
        score, rank = _number(c.get("score")), c.get("rerankRank")
        if c.get("served"):
            found.append(Outcome("served"))
        elif c.get("belowFloor"):
            found.append(
                Outcome(
                    "under the score floor",
                    "its similarity is under the floor and no word of the query matched it",
                )
            )
        elif c.get("belowTrust"):
            found.append(
                Outcome(
                    "under the trust floor",
                    f"it carries less trust than the recall's minTrust ({params.get('minTrust')})",
                )
            )
        elif isinstance(rank, int) and isinstance(limit, int) and rank > limit:
            found.append(
                Outcome(
                    "not in the top results",
                    f"the rerank placed it {rank}th, past the limit of {limit}",
                )
            )
        elif instead := (newer or {}).get(str(c.get("versionId")), []):
            found.append(
                Outcome(
                    "not in the top results",
                    "scored higher than a served result, but a newer memory that may update it"
                    f" was served in its place ({', '.join(instead)})",
                )
            )
        elif lowest is not None and score is not None and score > lowest:
            found.append(
                Outcome(
                    "not in the top results",
                    f"scored higher than a served result, but the answer is ordered after"
                    f" scoring by {', '.join(reorder)}, which left it past the limit of {limit}",
                )
            )
        else:
            found.append(Outcome("not in the top results", f"ranked past the limit of {limit}"))
    return found


def _reordering(params: Mapping[str, object]) -> list[str]:
    """The stages of a recall, as its parameters record them, that order the answer after
    the fused score."""
    limit = params.get("limit")
    diversify = params.get("diversify")
    stages = []
    if params.get("rerank"):
        stages.append("the rerank")
    if diversify is True or (diversify is None and isinstance(limit, int) and limit >= 5):
        stages.append("the diversity pass (MMR, which passes over a near copy of a result)")
    if params.get("recency"):
        stages.append("newer-first ordering of memories that agree")
    if params.get("ranker") or params.get("explore"):
        stages.append("the learned ranker")
    # Always: of a served memory that a newer candidate may update, the newer goes first.
    stages.append("the placing of a newer memory that may update another above it")
    return stages


def _lowest_served(candidates: Sequence[Mapping[str, object]]) -> float | None:
    scores = [_number(c.get("score")) for c in candidates if c.get("served")]
    return min((s for s in scores if s is not None), default=None)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None
