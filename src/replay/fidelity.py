"""Trace fidelity: re-derive each recorded recall from the log and compare.

For a ``recall.performed`` event, the read models are folded up to the seq its ranking read
(``view_seq``; the seq before it for older events), the query is opened and embedded again
(its vector must hash to the recorded digest), and recall runs with the recorded parameters.
Every candidate (ids, ranks, scores, the floor) and the served list must equal the recorded
ones; scores are compared to 1e-9, being sums of floats. For a recall a proxy turn injected,
the context is rendered again from the replayed versions by the proxy's one renderer and its
digest must equal the digest of what was sent. A reranked recall is reranked again, by the same
cross-encoder over the same pool: its scores and ranks must equal the recorded ones too.

A trace is *unverifiable*, and left out of the figure, when erasure took what it needs: its
query's container key, or any subject of its container that existed when it ran (its text fed
the container's index statistics, and perhaps the answer). Erasure is meant to make that
unrecoverable. A container's recall reads only that container's data (its own full-text
shard, its own exact vector scan), so another container's erasure leaves it verifiable; a recall
across every container is unverifiable after any erasure of a subject that existed. So is a trace
ranked by another version of the ranking rules (``recall.RANKING``) than this build's, and a
reranked one when this build's reranker is another model, or its files are not installed here.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal

import msgspec

from ..embedding.port import Embedder
from ..embedding.rerank import Reranker
from ..errors import RerankerUnavailable
from ..eventlog import EventLog, Sealer, StoredRecord
from ..eventlog.events import Candidate, ContextInjected, RecallPerformed, SubjectErased
from ..eventlog.subjects import container_subject, document_subject, memory_subject
from ..memory import (
    MEMORY_RENDERERS,
    RANKING,
    AsRanked,
    RecallRequest,
    RenderedMemory,
    TrustParams,
    World,
    digest,
    injected_source,
    render_memories,
)

Status = Literal["exact", "differs", "unverifiable"]
_EXACT_FIELDS = (
    "version_id",
    "served",
    "vector_rank",
    "bm25_rank",
    "below_floor",
    "rerank_rank",
    "below_trust",
)
_SCORE_FIELDS = ("similarity", "bm25", "fused", "score", "rerank_score")
# Event fields that name an erasable subject, and the subject they name.
_SUBJECTS = (
    ("container_tag", container_subject),
    ("memory_id", memory_subject),
    ("document_id", document_subject),
)


class TraceCheck(msgspec.Struct, frozen=True, kw_only=True):
    trace_id: str
    seq: int
    origin: str
    status: Status
    reasons: list[str] = []
    candidates: int = 0
    injections: int = 0  # injected contexts rendered again and matched


class FidelityReport(msgspec.Struct, frozen=True, kw_only=True):
    checked: int
    exact: int
    differs: int
    unverifiable: int
    fidelity: float | None  # exact / (checked - unverifiable); None when nothing verifiable
    traces: list[TraceCheck]


class _History(msgspec.Struct):
    recalls: list[StoredRecord]
    injections: dict[str, list[ContextInjected]]
    erasures: list[tuple[int, str, str | None]]  # (seq, subject, its container if known)
    first_seen: dict[str, int]  # subject -> seq of the first record naming it


def check_traces(
    log: EventLog,
    sealer: Sealer,
    embedder: Embedder | Callable[[int], Embedder],
    scratch: Path,
    *,
    only: Iterable[str] | None = None,
    sample: int | None = None,
    reranker: Reranker | None = None,
    trust: TrustParams | None = None,
) -> FidelityReport:
    """Check every recall trace (or those named, or an evenly spread sample of ``sample``);
    ``reranker`` reranks the reranked ones again (without it they are unverifiable).
    ``embedder`` may be a function of a seq: the embedder in force there (a data dir
    re-embedded since)."""
    embedder_at = embedder if callable(embedder) else (lambda _: embedder)
    history = _scan(log)
    chosen = history.recalls
    if only is not None:
        wanted = set(only)
        chosen = [r for r in chosen if _event(r).recall_id in wanted]
    if sample is not None and 0 < sample < len(chosen):
        step = len(chosen) / sample
        chosen = [chosen[int(i * step)] for i in range(sample)]
    # Every position a check needs, in order: the world is advanced through each, so no
    # batch applied to a full-text index straddles a recorded commit boundary.
    stops = sorted({seq for stored in chosen for seq in _needs(_event(stored)).values()})
    checks: list[TraceCheck] = []
    world: World | None = None
    try:
        for stored in chosen:
            event = _event(stored)
            needs = _needs(event)
            view = needs.pop("view")
            in_force = embedder_at(view)
            if (
                world is None
                or world.embedder is not in_force
                or world.position() > view
                or any(world.committed(family) > seq for family, seq in needs.items())
            ):  # a world only moves forward: start again (searches that raced each other)
                if world is not None:
                    world.close()
                world = World(log, sealer, in_force, scratch, trust=trust, reranker=reranker)
            for stop in stops:
                if world.position() < stop <= view:
                    world.advance(stop)
            world.advance(view)
            for family, seq in needs.items():
                if world.committed(family) < seq:
                    world.commit_through(family, seq)
            checks.append(_check(world, stored, history))
    finally:
        if world is not None:
            world.close()
    exact = sum(c.status == "exact" for c in checks)
    unverifiable = sum(c.status == "unverifiable" for c in checks)
    verifiable = len(checks) - unverifiable
    return FidelityReport(
        checked=len(checks),
        exact=exact,
        differs=verifiable - exact,
        unverifiable=unverifiable,
        fidelity=exact / verifiable if verifiable else None,
        traces=checks,
    )


def _needs(event: RecallPerformed) -> dict[str, int]:
    """The positions a check of ``event`` folds to: its view and its indexes' commits."""
    view = event.view_seq if event.view_seq is not None else 0
    return {"view": view, **{f: min(seq, view) for f, seq in event.index_seqs.items()}}


def _check(world: World, stored: StoredRecord, history: _History) -> TraceCheck:
    event = _event(stored)
    base = TraceCheck(trace_id=event.recall_id, seq=stored.seq, origin=event.origin, status="exact")
    lost = _erased_since(stored.seq, event.container_tag, history)
    query = world.sealer.open_text(event.query)
    if query is None:
        lost.insert(0, f"the query's container {event.container_tag!r} was erased")
    if event.view_seq is None or not event.index_seqs:
        lost.append("the event does not record where the read models and indexes stood")
    ranking = int(event.params.get("ranking") or 1)
    if ranking != RANKING:
        lost.append(f"ranked by version {ranking} of the ranking rules; this build has {RANKING}")
    params = event.params
    reranked = bool(params.get("rerank", False))
    if reranked:
        lost += _reranker_missing(str(params.get("reranker")), world.recall.reranker)
    ranker = params.get("ranker")
    learned = world.recall.learned
    if ranker is not None and learned is not None and learned.ranker.model(str(ranker)) is None:
        lost.append(f"ranked by model {ranker}, which the log does not train again here")
    if lost:
        return msgspec.structs.replace(base, status="unverifiable", reasons=lost)
    assert query is not None
    request = RecallRequest(
        q=query,
        container_tag=event.container_tag,
        limit=int(params.get("limit") or 10),
        mode=_mode(params.get("searchMode")),
        recency=bool(params.get("recency", True)),
        diversify=None if params.get("diversify") is None else bool(params["diversify"]),
        as_of=None if params.get("asOf") is None else int(params["asOf"] or 0),
        fact_as_of=None if params.get("factAsOf") is None else int(params["factAsOf"] or 0),
        include_forgotten=bool(params.get("includeForgotten", False)),
        rerank=reranked,
        rerank_pool=int(params["rerankPool"] or 0) if reranked else None,
        min_trust=None if params.get("minTrust") is None else float(params["minTrust"] or 0),
        # The learned stage ranks as it did: with the model the trace names, the same swap.
        as_ranked=AsRanked(
            digest=None if params.get("ranker") is None else str(params["ranker"]),
            explore=None if params.get("explore") is None else int(params["explore"] or 0),
        ),
    )
    world.sink.drafts.clear()
    try:
        result = world.recall.search(
            request, origin=event.origin, actor=stored.record.actor, durable=False
        )
    except RerankerUnavailable as exc:  # its files are missing or damaged here
        return msgspec.structs.replace(base, status="unverifiable", reasons=[str(exc)])
    replayed = world.sink.drafts[-1].event
    assert isinstance(replayed, RecallPerformed)
    reasons = _differences(event, replayed)
    # Each memory's source as the replayed read models carry it: the trust then, re-derived.
    served = [
        RenderedMemory.of(hit.row, injected_source(hit.source, hit.row.agent_id))
        for hit in result.hits
        if hit.row is not None
    ]
    injections = history.injections.get(event.recall_id, [])
    for injection in injections:
        if injection.renderer not in MEMORY_RENDERERS:
            reasons.append(f"injected with renderer {injection.renderer!r}, unknown here")
        elif [m.version_id for m in served] != injection.version_ids:
            reasons.append("the injected versions differ from the replayed ones")
        elif digest(render_memories(served, injection.renderer)) != injection.sent_digest:
            reasons.append("the context rendered again does not hash to what was sent")
    return msgspec.structs.replace(
        base,
        status="differs" if reasons else "exact",
        reasons=reasons,
        candidates=len(event.candidates),
        injections=len(injections),
    )


def _reranker_missing(recorded: str, reranker: Reranker | None) -> list[str]:
    """Why a trace reranked by the ``recorded`` reranker cannot be reranked again here."""
    if reranker is None:
        return [f"reranked by {recorded}; this replay has no reranker"]
    if reranker.identity != recorded:
        return [f"reranked by {recorded}; this build's reranker is {reranker.identity}"]
    return []


def _differences(recorded: RecallPerformed, replayed: RecallPerformed) -> list[str]:
    out: list[str] = []
    if recorded.query_vector_digest not in (None, replayed.query_vector_digest):
        out.append("the embedder no longer gives the recorded query vector")
    if recorded.learned != replayed.learned:
        out.append("the learned stage's features or scores differ")
    if recorded.served != replayed.served:
        out.append(f"served {recorded.served} at the time, {replayed.served} replayed")
    if len(recorded.candidates) != len(replayed.candidates):
        out.append(
            f"{len(recorded.candidates)} candidates at the time,"
            f" {len(replayed.candidates)} replayed"
        )
    for n, (was, now) in enumerate(zip(recorded.candidates, replayed.candidates, strict=False)):
        wrong = [f for f in _EXACT_FIELDS if getattr(was, f) != getattr(now, f)]
        wrong += [f for f in _SCORE_FIELDS if not _close(was, now, f)]
        if wrong:
            out.append(f"candidate {n + 1} ({was.version_id}) differs in {', '.join(wrong)}")
    return out


def _close(was: Candidate, now: Candidate, field: str) -> bool:
    a, b = getattr(was, field), getattr(now, field)
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _erased_since(seq: int, container: str | None, history: _History) -> list[str]:
    """The erasures after ``seq`` of subjects that existed at ``seq`` and that a recall in
    ``container`` (None: across every container) read: those of that container, or of an
    unknown one."""
    return [
        f"{subject} existed then and was erased at seq {at}"
        for at, subject, of in history.erasures
        if at > seq
        and history.first_seen.get(subject, at) < seq
        and (container is None or of is None or of == container)
    ]


def _scan(log: EventLog) -> _History:
    """One pass over the log: the recalls, what was injected from them, and the erasures."""
    recalls: list[StoredRecord] = []
    injections: defaultdict[str, list[ContextInjected]] = defaultdict(list)
    erasures: list[tuple[int, str, str | None]] = []
    first_seen: dict[str, int] = {}
    for stored in log.read():
        event = stored.record.event
        for field, subject in _SUBJECTS:
            value = getattr(event, field, None)
            if isinstance(value, str):
                first_seen.setdefault(subject(value), stored.seq)
        match event:
            case RecallPerformed():
                recalls.append(stored)
            case ContextInjected():
                injections[event.recall_id].append(event)
            case SubjectErased():
                erasures.append((stored.seq, event.subject, event.container_tag))
    return _History(recalls, dict(injections), erasures, first_seen)


def _event(stored: StoredRecord) -> RecallPerformed:
    event = stored.record.event
    assert isinstance(event, RecallPerformed)
    return event


def _mode(value: object) -> Literal["memories", "documents", "hybrid"]:
    if value == "documents":
        return "documents"
    if value == "hybrid":
        return "hybrid"
    return "memories"
