"""/inspect: the receipts. Each trace is a fold over one recall event."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from ..clock import iso
from ..errors import NotFound
from ..projections.traces import Trace
from ..runtime import Runtime


def inspect_routes(runtime: Runtime) -> APIRouter:
    router = APIRouter()
    core = runtime.core

    @router.get("/inspect")
    def recent(
        container_tag: Annotated[str | None, Query(alias="containerTag", max_length=256)] = None,
        origin: Annotated[str | None, Query(max_length=32)] = None,
        before: Annotated[
            int | None, Query(ge=1, description="only traces before this seq")
        ] = None,
        limit: Annotated[int, Query(ge=1, le=200)] = 20,
    ) -> JSONResponse:
        traces = core.traces.recent(
            container_tag=container_tag, origin=origin, before_seq=before, limit=limit
        )
        return JSONResponse({"traces": [_summary(t) for t in traces]})

    @router.get("/inspect/{trace_id}")
    def one(trace_id: str) -> JSONResponse:
        trace = core.traces.get(trace_id)
        if trace is None:
            raise NotFound(f"no trace {trace_id!r}")
        ids = [str(c["version_id"]) for c in trace.candidates]
        versions = core.memories.by_version_ids(ids)
        candidates = []
        for c in trace.candidates:
            ref = str(c["version_id"])
            document_id, _, index = ref.partition("#")
            if index.isdigit():  # a document chunk: documents do not version
                found = core.documents.chunk_at(document_id, int(index))
                what: dict[str, object] = {
                    "type": "document",
                    "documentId": document_id,
                    "chunkIndex": int(index),
                    "content": None if found is None else found.text,
                    "erased": found is None or found.text is None,
                }
            else:
                row = versions.get(ref)
                what = {
                    "type": "memory",
                    "id": None if row is None else row.memory_id,
                    "version": None if row is None else row.version,
                    "content": None if row is None else row.content,
                    "erased": row is not None and row.erased,
                }
            candidates.append(
                {
                    "versionId": ref,
                    **what,
                    "similarity": c.get("similarity"),
                    "bm25": c.get("bm25"),
                    "vectorRank": c.get("vector_rank"),
                    "bm25Rank": c.get("bm25_rank"),
                    "fused": c.get("fused"),
                    "score": c.get("score"),
                    "belowFloor": c.get("below_floor"),
                    "served": c.get("served"),
                }
            )
        return JSONResponse({**_summary(trace), "candidates": candidates})

    return router


def _summary(trace: Trace) -> dict[str, object]:
    return {
        "traceId": trace.recall_id,
        "seq": trace.seq,
        "at": iso(trace.at),
        "origin": trace.origin,
        "containerTag": trace.container_tag,
        "query": trace.query,
        "embedder": trace.embedder,
        "served": trace.served,
        "candidateCount": len(trace.candidates),
        "latencyMs": trace.latency_ms,
        "params": trace.params,
        "agentId": trace.agent_id,
        "protocol": trace.protocol,
        "status": "answered",
    }
