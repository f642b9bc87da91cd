"""/inspect: the receipts. A recall's trace is a fold over its recall event; a proxied turn's
over its turn event, the injections it made and its capture decision."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from ..clock import iso
from ..eventlog.events import InjectedSource, ProxyTurn
from ..memory import (
    MEMORY_RENDERERS,
    Core,
    RenderedMemory,
    TurnTrace,
    digest,
    render_memories,
)
from ..runtime import Runtime
from ..views import trace_json, trace_summary
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
        found: list[tuple[int, dict[str, object]]] = []
        if kind != "turn":
            found += [
                (t.seq, trace_summary(t))
                for t in core.reads.traces(
                    caller,
                    container_tag=container_tag,
                    origin=origin,
                    before_seq=before,
                    limit=limit,
                )
            ]
        if kind != "recall" and origin in (None, "proxy"):
            found += [
                (seq, _turn_summary(seq, at, turn, agent, protocol))
                for seq, at, turn, agent, protocol in core.reads.turns(
                    caller, container_tag=container_tag, before_seq=before, limit=limit
                )
            ]
        found.sort(key=lambda hit: -hit[0])
        return JSONResponse({"traces": [summary for _, summary in found[:limit]]})

    @router.get("/inspect/{trace_id}")
    def one(trace_id: str, request: Request) -> JSONResponse:
        caller = caller_in(request.scope)
        if trace_id.startswith("trn_"):
            return JSONResponse(turn_json(core, core.reads.turn(trace_id, caller)))
        # A trace over every container may hold any of them: only an unscoped key sees it.
        return JSONResponse(trace_json(core, core.reads.trace(trace_id, caller)))

    return router


def _turn_summary(
    seq: int, at: int, turn: ProxyTurn, agent_id: str, protocol: str
) -> dict[str, object]:
    return {
        "traceId": turn.turn_id,
        "type": "turn",
        "seq": seq,
        "at": iso(at),
        "origin": "proxy",
        "containerTag": turn.container_tag,
        "model": turn.model,
        "streamed": turn.stream,
        "memoryRound": turn.memory_round,
        "results": turn.results,
        "degraded": turn.degraded,
        "latencyMs": turn.latency_ms,
        "agentId": agent_id,
        "protocol": protocol,
        "status": turn.outcome,
        "httpStatus": turn.status,
    }


def turn_json(core: Core, trace: TurnTrace) -> dict[str, object]:
    """A proxied turn, with each injection rendered again from the versions it names: the
    proof that the trace reproduces the bytes sent (``reproduced``), or why it cannot."""
    turn = trace.turn
    injections = []
    for injection in trace.injections:
        rows = core.reads.versions(injection.version_ids)
        memories = [
            {
                "versionId": v,
                "id": None if rows.get(v) is None else rows[v].memory_id,
                "version": None if rows.get(v) is None else rows[v].version,
                "content": None if rows.get(v) is None else rows[v].content,
                "erased": rows.get(v) is None or rows[v].content is None,
            }
            for v in injection.version_ids
        ]
        reproduced: bool | None = None
        if injection.renderer in MEMORY_RENDERERS and not any(m["erased"] for m in memories):
            # With the sources the injection recorded: trust has moved since, the bytes not.
            sources: list[InjectedSource | None] = list(injection.sources) or [None] * len(
                injection.version_ids
            )
            text = render_memories(
                [
                    RenderedMemory.of(rows[v], source)
                    for v, source in zip(injection.version_ids, sources, strict=False)
                ],
                injection.renderer,
            )
            reproduced = digest(text) == injection.sent_digest
        injections.append(
            {
                "recallId": injection.recall_id,
                "versionIds": injection.version_ids,
                "renderer": injection.renderer,
                "sentDigest": injection.sent_digest,
                "sources": [
                    {
                        "agentId": s.agent_id,
                        "trust": s.trust,
                        "flags": s.flags,
                        "captured": s.captured,
                    }
                    for s in injection.sources
                ],
                "reproduced": reproduced,
                "memories": memories,
            }
        )
    capture = trace.capture
    return {
        "traceId": turn.turn_id,
        "type": "turn",
        "seq": trace.seq,
        "at": iso(trace.at),
        "containerTag": turn.container_tag,
        "model": turn.model,
        "stream": turn.stream,
        "requestDigest": turn.request_digest,
        "outcome": turn.outcome,
        "status": turn.status,
        "memoryRound": turn.memory_round,
        "results": turn.results,
        "answerDigest": turn.answer_digest,
        "degraded": turn.degraded,
        "latencyMs": turn.latency_ms,
        "profile": None
        if turn.profile_digest is None
        else {"setAt": iso(turn.profile_at), "digest": turn.profile_digest},
        "rounds": [
            {
                "requestDigest": r.request_digest,
                "status": r.status,
                "latencyMs": r.latency_ms,
                "decision": r.decision,
                "memoryCalls": r.memory_calls,
                "clientCalls": r.client_calls,
                "arguments": args,
                "recallIds": r.recall_ids,
                "results": r.results,
                "error": r.error,
                "saveCalls": r.save_calls,
                "saved": r.saved,
                "saveReplaces": r.save_replaces,
            }
            for r, args in zip(turn.rounds, trace.arguments, strict=True)
        ],
        "injections": injections,
        "capture": None
        if capture is None
        else {
            "method": capture.method,
            "proposed": capture.proposed,
            "excluded": capture.excluded,
            "redactions": capture.redactions,
            "written": capture.written,
            "fallback": capture.fallback,
        },
        "agentId": trace.agent_id,
        "protocol": trace.protocol,
    }
