"""``/ui/agents``: each agent's trust over time, the signals that moved it, its keys, and the
user's levers over it (revoke a key, quarantine and release, roll back and undo).

Every lever is the command the REST API runs (``api/oversight_routes.py``), for the user or
an admin key only. The two that cannot be taken back by a click are asked first, on a page of
their own: a key's revocation (it cannot be undone), and a rollback, whose page previews what
it will change before it runs. The trust chart is drawn here as SVG from the agent's signals:
no script.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ..errors import InvalidInput, NotFound
from ..memory import Caller, Core, SignalRow
from ..memory.agents import AGENT_NAME, check_agent_name
from .forms import read_form
from .pages import Pages, see_other
from .snippets import Snippets

SIGNALS = 200  # signals an agent's page draws and lists
CHART = (720, 160)  # the trust chart's width and height, in pixels


def agent_pages(core: Core, pages: Pages, threshold: float) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    every_key = core.agents.keys  # every key ever made, revoked ones included

    def visible(caller: Caller, agent_id: str) -> None:
        """A scoped key sees only its own agent; anyone else, as if it did not exist. (The
        server's own agents, the user among them, have pages too: only their levers are
        refused.)"""
        if AGENT_NAME.fullmatch(agent_id) is None or (
            caller.scoped and caller.agent_id != agent_id
        ):
            raise NotFound(f"no agent {agent_id!r}")

    @router.get("/ui/agents")
    def agents(request: Request) -> Response:
        caller = pages.caller(request)
        if caller.scoped:
            return see_other(f"/ui/agents/{caller.agent_id}")
        scores = {s.agent_id: s for s in core.trust.scores()}
        keys = every_key()
        names = [*dict.fromkeys([*(k.agent_id for k in keys), *scores])]
        rows = [
            {
                "score": scores.get(name) or core.trust.score(name),
                "keys": sum(k.agent_id == name and k.revoked_at is None for k in keys),
                "quarantined": core.quarantine.state(name) is not None,
            }
            for name in names
        ]
        return pages.render(request, "agents.html", rows=rows, threshold=threshold)

    @router.get("/ui/agents/{agent_id}")
    def agent(
        request: Request,
        agent_id: str,
        before: Annotated[int | None, Query(ge=1, le=2**63 - 1)] = None,
    ) -> Response:
        caller = pages.caller(request)
        visible(caller, agent_id)
        keys = [k for k in every_key() if k.agent_id == agent_id]
        score = core.trust.score(agent_id)
        if not keys and not score.user and score.first_seq == 0:
            raise NotFound(f"no agent {agent_id!r}")
        signals = core.trust.signals(agent_id, limit=SIGNALS, before_seq=before)
        return pages.render(
            request,
            "agent.html",
            score=score,
            threshold=threshold,
            keys=keys,
            signals=signals,
            snippets=Snippets(
                core,
                caller,
                memory_ids=[s.memory_id for s in signals if s.memory_id],
                version_ids=[s.version_id for s in signals if s.version_id],
            ),
            chart=trust_chart(signals, threshold),
            quarantine=core.quarantine.state(agent_id),
            rollbacks=core.rollbacks.of(agent_id) if caller.admin else [],
            older=signals[-1].seq if len(signals) == SIGNALS else None,
        )

    async def admin_form(request: Request) -> tuple[dict[str, str], Caller]:
        form = await read_form(request, pages.sessions)
        caller = pages.caller(request)
        caller.require_admin()
        return form, caller

    @router.post("/ui/agents/{agent_id}/quarantine")
    async def quarantine(request: Request, agent_id: str) -> Response:
        form, caller = await admin_form(request)
        check_agent_name(agent_id)
        reason = form.get("reason", "").strip() or None
        await run_in_threadpool(core.quarantine.quarantine, agent_id, reason, caller.actor("rest"))
        return see_other(f"/ui/agents/{agent_id}")

    @router.post("/ui/agents/{agent_id}/release")
    async def release(request: Request, agent_id: str) -> Response:
        _, caller = await admin_form(request)
        check_agent_name(agent_id)
        await run_in_threadpool(core.quarantine.release, agent_id, caller.actor("rest"))
        return see_other(f"/ui/agents/{agent_id}")

    @router.get("/ui/agents/{agent_id}/keys/{key_id}/revoke")
    def confirm_revoke(request: Request, agent_id: str, key_id: str) -> Response:
        caller = pages.caller(request)
        caller.require_admin()
        check_agent_name(agent_id)
        key = next((k for k in every_key() if k.key_id == key_id and k.agent_id == agent_id), None)
        if key is None or key.revoked_at is not None:
            raise NotFound(f"no live key {key_id!r} of agent {agent_id!r}")
        return pages.render(request, "revoke.html", agent_id=agent_id, key=key)

    @router.post("/ui/agents/{agent_id}/keys/{key_id}/revoke")
    async def revoke(request: Request, agent_id: str, key_id: str) -> Response:
        _, caller = await admin_form(request)
        check_agent_name(agent_id)
        await run_in_threadpool(
            lambda: core.agents.revoke(
                key_id, caller.actor("rest"), agent_id=agent_id, keep_one=True
            )
        )
        return see_other(f"/ui/agents/{agent_id}")

    @router.get("/ui/agents/{agent_id}/rollback")
    async def preview_rollback(
        request: Request,
        agent_id: str,
        since_seq: Annotated[int, Query(alias="sinceSeq", ge=1, le=2**63 - 1)],
    ) -> Response:
        caller = pages.caller(request)
        caller.require_admin()
        check_agent_name(agent_id)
        plan = await run_in_threadpool(core.rollbacks.preview, agent_id, since_seq)
        chains = [*plan.forgotten, *plan.restored, *plan.reforgotten, *plan.erased]
        latest = {m: core.reads.latest(m, caller) for m in dict.fromkeys(chains)}
        versions = core.reads.versions(
            [v for r in plan.reverted for v in (r.replaced_version_id, r.restored_version_id)]
        )
        return pages.render(
            request,
            "rollback.html",
            agent_id=agent_id,
            since_seq=since_seq,
            plan=plan,
            latest=latest,
            versions=versions,
            nothing=not any((*chains, *plan.reverted, *plan.profiles, *plan.documents)),
        )

    @router.post("/ui/agents/{agent_id}/rollback")
    async def rollback(request: Request, agent_id: str) -> Response:
        form, caller = await admin_form(request)
        check_agent_name(agent_id)
        since = form.get("sinceSeq", "").strip()
        if not since.isdigit() or int(since) < 1:
            raise InvalidInput("a rollback needs the log position it starts at (sinceSeq >= 1)")
        await run_in_threadpool(core.rollbacks.rollback, agent_id, int(since), caller.actor("rest"))
        return see_other(f"/ui/agents/{agent_id}")

    @router.post("/ui/agents/{agent_id}/rollbacks/{rollback_id}/undo")
    async def undo(request: Request, agent_id: str, rollback_id: str) -> Response:
        _, caller = await admin_form(request)
        found = core.rollbacks.get(rollback_id)
        if found is None or found.agent_id != agent_id:
            raise NotFound(f"no rollback {rollback_id!r} of agent {agent_id!r}")
        await run_in_threadpool(core.rollbacks.undo, rollback_id, caller.actor("rest"))
        return see_other(f"/ui/agents/{agent_id}")

    return router


def trust_chart(signals: Sequence[SignalRow], threshold: float) -> dict[str, object]:
    """The points of the trust-after-each-signal line, oldest first, scaled to ``CHART``: x by
    the signal's order, y from trust 0 (bottom) to 1 (top); the threshold's height; the trust
    axis's ticks (0 to 1 by quarters) and the dates of the first, middle and last signals under
    the line, so the chart reads without hovering."""
    width, height = CHART
    ordered = sorted(signals, key=lambda s: s.seq)
    step = width / max(1, len(ordered) - 1)
    points = [
        (round(i * step, 1), round(height - s.trust * height, 1), s) for i, s in enumerate(ordered)
    ]
    dated = sorted({0, len(points) // 2, len(points) - 1}) if points else []
    return {
        "width": width,
        "height": height,
        "line": " ".join(f"{x},{y}" for x, y, _ in points),
        "points": points,
        "threshold": round(height - threshold * height, 1),
        "y_ticks": [(round(height - t * height, 1), f"{t:.2f}") for t in (0, 0.25, 0.5, 0.75, 1)],
        "x_ticks": [(points[i][0], day(points[i][2].at)) for i in dated],
        "last": points[-1] if points else None,
    }


def day(instant: int) -> str:
    """A signal's date under the chart, in UTC (the time is in each point's tooltip)."""
    return datetime.fromtimestamp(instant / 1e9, tz=UTC).strftime("%Y-%m-%d")
