"""The JSON shapes of the read models, one each, for every shell that answers with them: the
REST API (``api/``), the MCP tools (``mcp_server/``) and the dashboard (``ui/``) read a
version, a chain, a search hit, a recall trace, a proxied turn and a profile alike, field for
field (``tests/mcp/test_parity.py``)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from .clock import iso
from .eventlog.events import InjectedSource, ProxyTurn
from .memory import (
    MEMORY_RENDERERS,
    Caller,
    Carried,
    ChainView,
    ChunkRow,
    Core,
    ErasureReceipt,
    Hit,
    LinkRow,
    Rated,
    Rating,
    RenderedMemory,
    SplitRow,
    Trace,
    TurnTrace,
    VersionRow,
    WriteOutcome,
    digest,
    render_memories,
)
from .memory.recall.learned import FEATURES


def version_json(row: VersionRow, *, windows: bool) -> dict[str, object]:
    body: dict[str, object] = {
        "id": row.memory_id,
        "versionId": row.version_id,
        "version": row.version,
        "containerTag": row.container_tag,
        "content": row.content,
        "context": row.context,
        "isStatic": row.is_static,
        "metadata": row.metadata,
        "observedAt": row.observed_at_text or iso(row.observed_at),
        "forgotten": row.forgotten,
        "provenance": {
            "agentId": row.agent_id,
            "protocol": row.protocol,
            "createdAt": iso(row.valid_from),
            "seq": row.seq,
            "kind": row.kind,
        },
    }
    if windows:
        body["validFrom"] = iso(row.valid_from)
        body["validTo"] = iso(row.valid_to)
    return body


def chain_body(core: Core, memory_id: str, caller: Caller) -> dict[str, object]:
    """``GET /memories/{id}`` and the MCP ``get_memory`` tool: the chain as the store has it
    now (``NotFound`` if there is none, or it is out of the caller's reach)."""
    read = core.reads.chain(memory_id, caller)
    return chain_json(
        read.chain,
        read.links,
        split_from=read.split_from,
        split_into=read.split_into,
        quarantined=read.quarantined,
    )


def chain_json(
    chain: ChainView,
    links: Sequence[LinkRow] = (),
    split_from: SplitRow | None = None,
    split_into: Sequence[SplitRow] = (),
    quarantined: Collection[str] = (),
) -> dict[str, object]:
    """A chain with its versions and windows, the memories it may update or be updated by, and
    its splits (the version it was split from, the chains split from its versions). A version
    whose author is in ``quarantined`` says so: search and lists hide it, and it is kept."""
    return {
        "id": chain.memory_id,
        "containerTag": chain.container_tag,
        "createdAt": iso(chain.created_at),
        "latestVersion": chain.latest_version,
        "forgotten": chain.forgotten,
        "forgottenAt": iso(chain.forgotten_at),
        "forgottenReason": chain.forgotten_reason,
        "erased": chain.erased,
        "versions": [
            {**version_json(v, windows=True), "quarantined": v.agent_id in quarantined}
            for v in chain.versions
        ],
        "possiblyUpdates": [
            _link_json(link, link.target_memory_id)
            for link in links
            if link.memory_id == chain.memory_id
        ],
        "possiblyUpdatedBy": [
            _link_json(link, link.memory_id)
            for link in links
            if link.target_memory_id == chain.memory_id
        ],
        "splitFrom": None
        if split_from is None
        else {"id": split_from.source_memory_id, "versionId": split_from.source_version_id},
        "splitInto": [
            {"id": row.memory_id, "versionId": row.source_version_id} for row in split_into
        ],
    }


def _link_json(link: LinkRow, other: str) -> dict[str, object]:
    return {
        "id": other,
        "similarity": round(link.similarity, 6),
        "reason": link.reason,
        "at": iso(link.at),
        "seq": link.seq,
    }


def hit_json(hit: Hit, rank: int) -> dict[str, object]:
    """A served memory or document chunk, as ``POST /search`` shows it: ``rank`` is its place
    in the results (1 the first); ``score`` is the fused evidence, not the order (diversity,
    the newer of two linked memories and agreed newer statements move hits past it)."""
    return {
        "rank": rank,
        **(
            {"type": "memory", **version_json(hit.row, windows=True)}
            if hit.row is not None
            else chunk_json(hit.chunk)
        ),
        "similarity": round(hit.similarity, 6),
        "score": round(hit.score, 6),
        **({"rerankScore": round(hit.rerank_score, 6)} if hit.rerank_score is not None else {}),
        **({"possiblyOutdatedBy": list(hit.outdated_by)} if hit.outdated_by else {}),
        **(source_json(hit.source) if hit.row is not None else {}),
    }


def source_json(source: Carried | None) -> dict[str, object]:
    """What a memory carries into recall: the least trust among its sources (never more than
    any of them), each source's trust, and its status (flagged by the poisoning detector,
    captured from a conversation)."""
    if source is None:
        return {"trust": None, "sources": [], "flagged": False, "flags": [], "captured": False}
    return {
        "trust": round(source.trust, 6),
        "sources": [{"agentId": a, "trust": round(t, 6)} for a, t in source.sources],
        "flagged": source.flagged,
        "flags": list(source.flags),
        "captured": source.captured,
    }


def chunk_json(chunk: ChunkRow | None) -> dict[str, object]:
    assert chunk is not None
    return {
        "type": "document",
        "documentId": chunk.document_id,
        "chunkIndex": chunk.index,
        "title": chunk.title,
        "containerTag": chunk.container_tag,
        "content": chunk.text,
        "start": chunk.start,
        "end": chunk.end,
    }


def trace_summary(trace: Trace) -> dict[str, object]:
    """A recall, as ``GET /inspect`` lists it."""
    return {
        "traceId": trace.recall_id,
        "type": "recall",
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


def trace_json(core: Core, trace: Trace) -> dict[str, object]:
    """A recall with every candidate, as ``GET /inspect/{traceId}`` shows it."""
    versions = core.reads.versions([str(c["version_id"]) for c in trace.candidates])
    carried = core.reads.carried(list(versions))
    candidates = []
    for c in trace.candidates:
        ref = str(c["version_id"])
        document_id, _, index = ref.partition("#")
        if index.isdigit():  # a document chunk: documents do not version
            found = core.reads.chunk(document_id, int(index))
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
                "context": None if row is None else row.context,
                "erased": row is not None and row.erased,
                **source_json(carried.get(ref)),
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
                "rerankScore": c.get("rerank_score"),
                "rerankRank": c.get("rerank_rank"),
                "belowTrust": c.get("below_trust", False),
                "rankerScore": c.get("ranker_score"),
                "features": c.get("features"),
                "served": c.get("served"),
            }
        )
    feedback = [rating_json(r) for r in core.reads.ratings(trace)]
    return {
        **trace_summary(trace),
        "candidates": candidates,
        "feedback": feedback,
        "ranker": learned_json(core, trace.params),
    }


def learned_json(core: Core, params: dict[str, object]) -> dict[str, object] | None:
    """What the learned stage did to a recall: the model that reordered it (with its weights,
    each per standard deviation of its feature) and the exploration swap; None if neither."""
    digest, explore = params.get("ranker"), params.get("explore")
    if digest is None and explore is None:
        return None
    model = None if digest is None else core.ranker.model(str(digest))
    return {
        "digest": digest,
        "weights": None if model is None else model.explained(),
        "features": list(FEATURES),
        "explore": explore,
    }


def rating_json(rating: Rating) -> dict[str, object]:
    """A grade given to one of a recall's results, as the trace shows it: never the reason,
    which only the log holds (sealed)."""
    return {
        "seq": rating.seq,
        "at": iso(rating.at),
        "versionId": rating.version_id,
        "memoryId": rating.memory_id,
        "grade": rating.grade,
        "agentId": rating.agent_id,
        "protocol": rating.protocol,
    }


def rated_json(rated: Rated) -> dict[str, object]:
    """A rating just recorded, as ``POST /recalls/{traceId}/feedback`` answers it."""
    return {
        "traceId": rated.trace_id,
        "versionId": rated.version_id,
        "memoryId": rated.memory_id,
        "grade": rated.grade,
        "seq": rated.seq,
    }


def profile_json(
    container_tag: str, found: tuple[dict[str, object], int] | None
) -> dict[str, object]:
    """A container's profile, as ``GET /profile`` shows it (empty lists when none is set)."""
    profile, updated = found if found is not None else ({}, None)
    return {
        "containerTag": container_tag,
        "static": profile.get("static", []),
        "dynamic": profile.get("dynamic", []),
        "updatedAt": iso(updated),
    }


def outcome_json(outcome: WriteOutcome) -> dict[str, object]:
    """What became of one written memory, as ``POST /memories`` answers it."""
    return {
        "id": outcome.memory_id,
        "versionId": outcome.version_id,
        "version": outcome.version,
        "status": outcome.status,
        "similarity": outcome.similarity,
        "possiblyUpdates": outcome.possibly_updates,
        "possiblyOutdatedBy": outcome.possibly_outdated_by,
        "reason": outcome.reason,
        "flagged": bool(outcome.flags),
        "flags": list(outcome.flags),
        "seq": outcome.seq,
    }


def erasure_json(erased: ErasureReceipt) -> dict[str, object]:
    """The receipt of a container's erasure, as ``DELETE /containers/{tag}`` answers it."""
    receipt = erased.receipt
    return {
        "containerTag": receipt.container_tag,
        "erased": True,
        "repeated": erased.repeated,
        "seq": erased.seq,
        "erasedAt": iso(erased.erased_at),
        "destroyed": {
            "memories": receipt.memories,
            "versions": receipt.versions,
            "documents": receipt.documents,
            "chunks": receipt.chunks,
            "profile": receipt.profile,
            "recalls": receipt.recalls,
            "turns": receipt.turns,
        },
    }


def recent_traces(
    core: Core,
    caller: Caller,
    *,
    container_tag: str | None,
    limit: int,
    origin: str | None = None,
    kind: str | None = None,
    before: int | None = None,
) -> list[dict[str, object]]:
    """Recent recalls and proxied turns, newest first (by log seq), as ``GET /inspect`` and
    the dashboard list them; ``kind`` keeps only ``recall`` or ``turn``."""
    found: list[tuple[int, dict[str, object]]] = []
    if kind != "turn":
        found += [
            (t.seq, trace_summary(t))
            for t in core.reads.traces(
                caller, container_tag=container_tag, origin=origin, before_seq=before, limit=limit
            )
        ]
    if kind != "recall" and origin in (None, "proxy"):
        found += [
            (seq, turn_summary(seq, at, turn, agent, protocol))
            for seq, at, turn, agent, protocol in core.reads.turns(
                caller, container_tag=container_tag, before_seq=before, limit=limit
            )
        ]
    found.sort(key=lambda hit: -hit[0])
    return [summary for _, summary in found[:limit]]


def turn_summary(
    seq: int, at: int, turn: ProxyTurn, agent_id: str, protocol: str
) -> dict[str, object]:
    """A proxied turn, as ``GET /inspect`` and the dashboard list it."""
    return {
        "traceId": turn.turn_id,
        "type": "turn",
        "seq": seq,
        "at": iso(at),
        "origin": "proxy",
        "containerTag": turn.container_tag,
        "model": turn.model or None,  # None: none named, or its container erased
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
        text: str | None = None
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
                # What was sent, rendered again from the log (when ``reproduced``, byte for byte).
                "text": text,
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
        "model": turn.model or None,  # None: none named, or its container erased
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
