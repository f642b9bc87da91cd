"""``GET /agents`` and ``GET /agents/{id}``: each agent's trust, explained by its signals.

A score is a fold over the log (``projections/trust/projection.py``), so it is shown with the events
that moved it: each signal's seq, kind, signed weight and the trust after it. Key ids and
scopes are shown, never a secret or its digest. A key scoped to containers may read its own
agent only: another agent's signals name memories of other containers.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from ..clock import iso
from ..errors import ContainerForbidden, NotFound
from ..memory import AgentScore
from ..runtime import Runtime
from ..web.caller import caller_in


def agent_routes(runtime: Runtime) -> APIRouter:
    router = APIRouter()
    core = runtime.core
    threshold = runtime.settings.trust_threshold
    all_keys = core.agents.keys  # every key ever made, revoked ones included

    def score_json(score: AgentScore) -> dict[str, object]:
        return {
            "agentId": score.agent_id,
            "user": score.user,
            "trust": round(score.trust, 6),
            "alpha": round(score.alpha, 6),
            "beta": round(score.beta, 6),
            "distrusted": not score.user and score.trust < threshold,
        }

    @router.get("/agents")
    def list_agents(request: Request) -> JSONResponse:
        if caller_in(request.scope).scoped:
            raise ContainerForbidden("this key may read only its own agent: GET /agents/{id}")
        scores = {s.agent_id: s for s in core.trust.scores()}
        every_key = all_keys()
        named = [k.agent_id for k in every_key]
        agents = [*dict.fromkeys([*named, *scores])]
        return JSONResponse(
            {
                "agents": [
                    {
                        **score_json(scores.get(a) or core.trust.score(a)),
                        "liveKeys": sum(
                            k.agent_id == a and k.revoked_at is None for k in every_key
                        ),
                    }
                    for a in agents
                ],
                "threshold": threshold,
            }
        )

    @router.get("/agents/{agent_id}")
    def get_agent(
        agent_id: str,
        request: Request,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        before_seq: Annotated[int | None, Query(alias="beforeSeq", ge=1)] = None,
    ) -> JSONResponse:
        caller = caller_in(request.scope)
        if caller.scoped and caller.agent_id != agent_id:
            raise NotFound(f"no agent {agent_id!r}")
        keys = [k for k in all_keys() if k.agent_id == agent_id]
        score = core.trust.score(agent_id)
        if not keys and not score.user and score.first_seq == 0:
            raise NotFound(f"no agent {agent_id!r}")
        params = core.trust.params
        signals = core.trust.signals(agent_id, limit=limit, before_seq=before_seq)
        return JSONResponse(
            {
                **score_json(score),
                "prior": {"alpha": params.prior_alpha, "beta": params.prior_beta},
                "forgetting": params.forgetting,
                "threshold": threshold,
                "keys": [
                    {
                        "keyId": k.key_id,
                        "containers": None if k.containers is None else list(k.containers),
                        "createdAt": iso(k.created_at),
                        "createdSeq": k.created_seq,
                        "revokedAt": iso(k.revoked_at),
                        "live": k.revoked_at is None,
                    }
                    for k in keys
                ],
                "counts": {
                    "writes": score.writes,
                    "versions": core.trust.versions_written(agent_id),
                    "flagged": score.flagged,
                    "signals": score.signals,
                    "positive": score.positive,
                    "negative": score.negative,
                },
                "firstSeq": score.first_seq or None,
                "lastSignalSeq": score.last_signal_seq,
                "signals": [
                    {
                        "seq": s.seq,
                        "at": iso(s.at),
                        "kind": s.kind,
                        "weight": round(s.weight, 6),
                        "trustAfter": round(s.trust, 6),
                        "byAgent": s.by_agent,
                        "memoryId": s.memory_id,
                        "versionId": s.version_id,
                    }
                    for s in signals
                ],
                "nextBeforeSeq": signals[-1].seq if len(signals) == limit else None,
            }
        )

    return router
