"""The REST API's answers (``docs/api.md``) as msgspec Structs, camelCase on the wire and
snake_case here. Unknown fields are ignored, so a newer server's answers still decode; instants
stay the ISO 8601 strings the server sends (``observedAt`` as written: maybe a plain date)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

Scalar = str | int | float | bool | None
Metadata = dict[str, Scalar]


class _Answer(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    pass


class WriteOutcome(_Answer, frozen=True, kw_only=True):
    """What the write choke point did with one memory of ``POST /memories``."""

    id: str
    version_id: str
    version: int
    status: str  # created, deduplicated or superseded
    similarity: float | None = None
    possibly_updates: str | None = None
    possibly_outdated_by: str | None = None
    reason: str | None = None
    flagged: bool = False
    flags: list[str] = msgspec.field(default_factory=list)
    seq: int = 0


class WriteResult(_Answer, frozen=True, kw_only=True):
    container_tag: str
    memories: list[WriteOutcome]
    # True when the server answered a retry from its record of the first answer
    # (``Idempotent-Replayed: true``): nothing was written by this call.
    replayed: bool = False


class Provenance(_Answer, frozen=True, kw_only=True):
    agent_id: str | None = None
    protocol: str | None = None
    created_at: str | None = None
    seq: int | None = None
    kind: str | None = None


class MemoryVersion(_Answer, frozen=True, kw_only=True):
    """A version of a memory, as lists (without ``valid_from``/``valid_to``) and chains show it;
    ``content`` is None once the memory was erased."""

    id: str
    version_id: str
    version: int
    container_tag: str
    content: str | None = None
    context: str | None = None
    is_static: bool = False
    metadata: Metadata | None = None
    observed_at: str | None = None
    forgotten: bool = False
    provenance: Provenance | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    quarantined: bool = False


class MemoryPage(_Answer, frozen=True, kw_only=True):
    memories: list[MemoryVersion]
    total: int
    limit: int
    offset: int


class Link(_Answer, frozen=True, kw_only=True):
    """A ``possiblyUpdates`` link between two memories."""

    id: str
    similarity: float | None = None
    reason: str | None = None
    at: str | None = None
    seq: int | None = None


class SplitRef(_Answer, frozen=True, kw_only=True):
    id: str
    version_id: str


class Chain(_Answer, frozen=True, kw_only=True):
    """A memory with every version, as ``GET /memories/{id}`` and the lifecycle routes answer."""

    id: str
    container_tag: str
    created_at: str | None = None
    latest_version: int
    forgotten: bool = False
    forgotten_at: str | None = None
    forgotten_reason: str | None = None
    erased: bool = False
    versions: list[MemoryVersion] = msgspec.field(default_factory=list)
    possibly_updates: list[Link] = msgspec.field(default_factory=list)
    possibly_updated_by: list[Link] = msgspec.field(default_factory=list)
    split_from: SplitRef | None = None
    split_into: list[SplitRef] = msgspec.field(default_factory=list)

    @property
    def latest(self) -> MemoryVersion | None:
        """The version numbered ``latest_version`` (None for an erased chain's empty list)."""
        return next((v for v in self.versions if v.version == self.latest_version), None)


class MemoryErased(_Answer, frozen=True, kw_only=True):
    id: str
    hard_deleted: bool = True
    erased: bool = True
    seq: int


class Source(_Answer, frozen=True, kw_only=True):
    agent_id: str
    trust: float | None = None


class MemoryHit(MemoryVersion, frozen=True, kw_only=True, tag="memory", tag_field="type"):
    """A memory served by ``POST /search``: its version, and why it was served where it was."""

    rank: int
    similarity: float = 0.0
    score: float = 0.0
    rerank_score: float | None = None
    possibly_outdated_by: list[str] = msgspec.field(default_factory=list)
    trust: float | None = None
    sources: list[Source] = msgspec.field(default_factory=list)
    flagged: bool = False
    flags: list[str] = msgspec.field(default_factory=list)
    captured: bool = False


class DocumentHit(_Answer, frozen=True, kw_only=True, tag="document", tag_field="type"):
    """A document's chunk served by ``POST /search``; ``start``/``end``: its character offsets."""

    rank: int
    document_id: str
    chunk_index: int
    title: str | None = None
    container_tag: str | None = None
    content: str | None = None
    start: int | None = None
    end: int | None = None
    similarity: float = 0.0
    score: float = 0.0
    rerank_score: float | None = None


class SearchResult(_Answer, frozen=True, kw_only=True):
    results: list[MemoryHit | DocumentHit]
    trace_id: str
    search_mode: str = "memories"


class RecallUsed(_Answer, frozen=True, kw_only=True):
    trace_id: str
    version_ids: list[str]
    memory_ids: list[str]
    seq: int


class RecallFeedback(_Answer, frozen=True, kw_only=True):
    """A rating recorded (``POST /recalls/{traceId}/feedback``): the served version, its
    memory, the grade (0 irrelevant, 1 related, 2 useful, 3 answer) and the event's seq."""

    trace_id: str
    version_id: str
    memory_id: str
    grade: int
    seq: int


class DocumentWrite(_Answer, frozen=True, kw_only=True):
    id: str
    status: str  # created or deduplicated
    chunks: int
    flagged: bool = False
    flags: list[str] = msgspec.field(default_factory=list)
    seq: int


class Document(_Answer, frozen=True, kw_only=True):
    """A document; ``content`` is only in ``get_document``'s answer, not in lists."""

    id: str
    container_tag: str
    title: str | None = None
    metadata: Metadata | None = None
    chunks: int = 0
    erased: bool = False
    forgotten: bool = False
    provenance: Provenance | None = None
    content: str | None = None


class DocumentPage(_Answer, frozen=True, kw_only=True):
    documents: list[Document]
    total: int
    limit: int
    offset: int


class DocumentErased(_Answer, frozen=True, kw_only=True):
    id: str
    erased: bool = True
    seq: int


class Profile(_Answer, frozen=True, kw_only=True):
    container_tag: str
    static: list[str] = msgspec.field(default_factory=list)
    dynamic: list[str] = msgspec.field(default_factory=list)
    updated_at: str | None = None


class ProfileErased(_Answer, frozen=True, kw_only=True):
    container_tag: str
    erased: bool = True
    seq: int


class Destroyed(_Answer, frozen=True, kw_only=True):
    memories: int = 0
    versions: int = 0
    documents: int = 0
    chunks: int = 0
    profile: bool = False
    recalls: int = 0
    turns: int = 0


class ContainerErasure(_Answer, frozen=True, kw_only=True):
    """The receipt of ``DELETE /containers/{tag}`` (``repeated``: nothing was written since)."""

    container_tag: str
    erased: bool = True
    repeated: bool = False
    seq: int
    erased_at: str | None = None
    destroyed: Destroyed = msgspec.field(default_factory=Destroyed)


class Candidate(_Answer, frozen=True, kw_only=True):
    """One candidate of a recorded recall, served or not, with every score it got."""

    version_id: str
    type: Literal["memory", "document"] = "memory"
    id: str | None = None
    version: int | None = None
    document_id: str | None = None
    chunk_index: int | None = None
    content: str | None = None
    context: str | None = None
    erased: bool = False
    similarity: float | None = None
    bm25: float | None = None
    vector_rank: int | None = None
    bm25_rank: int | None = None
    fused: float | None = None
    score: float | None = None
    below_floor: bool | None = None
    rerank_score: float | None = None
    rerank_rank: int | None = None
    below_trust: bool = False
    served: bool | None = None
    trust: float | None = None
    flagged: bool = False
    flags: list[str] = msgspec.field(default_factory=list)


class Rating(_Answer, frozen=True, kw_only=True):
    """A grade given to one of a recall's results, as its trace lists it (no reason)."""

    seq: int
    at: str
    version_id: str
    memory_id: str
    grade: int
    agent_id: str | None = None
    protocol: str | None = None


class RecallTrace(_Answer, frozen=True, kw_only=True, tag="recall", tag_field="type"):
    """A recorded search, as ``GET /inspect/{traceId}`` shows it."""

    trace_id: str
    seq: int
    at: str
    origin: str | None = None
    container_tag: str | None = None
    query: str | None = None
    embedder: str | None = None
    served: list[str] = msgspec.field(default_factory=list)
    candidate_count: int = 0
    latency_ms: dict[str, float] = msgspec.field(default_factory=dict)
    params: dict[str, Any] = msgspec.field(default_factory=dict)
    agent_id: str | None = None
    protocol: str | None = None
    candidates: list[Candidate] = msgspec.field(default_factory=list)
    feedback: list[Rating] = msgspec.field(default_factory=list)


class TurnTrace(_Answer, frozen=True, kw_only=True, tag="turn", tag_field="type"):
    """A proxied chat turn (``trn_…``); rounds, injections, capture as in ``docs/proxy.md``."""

    trace_id: str
    seq: int
    at: str
    container_tag: str | None = None
    model: str | None = None
    stream: bool = False
    outcome: str | None = None
    status: int | None = None
    degraded: bool = False
    latency_ms: float | None = None
    rounds: list[dict[str, Any]] = msgspec.field(default_factory=list)
    injections: list[dict[str, Any]] = msgspec.field(default_factory=list)
    capture: dict[str, Any] | None = None
    agent_id: str | None = None
    protocol: str | None = None


Trace = RecallTrace | TurnTrace


class HealthLog(_Answer, frozen=True, kw_only=True):
    head: int
    writable: bool = True
    error: dict[str, str] | None = None


class Health(_Answer, frozen=True, kw_only=True):
    """``GET /health``; ``ok`` is false (and the status 503) while writes are stopped."""

    ok: bool
    service: str = "mnemolog"
    version: str | None = None
    auth: str | None = None  # "required" once an API key is live, else "none"
    log: HealthLog | None = None


class LogHead(_Answer, frozen=True, kw_only=True):
    head: int
    # How far this node's projections have applied the log (``GET /stats``; on a log several
    # nodes share, ``head - applied`` is how far this node trails it).
    applied: int | None = None


class Stats(_Answer, frozen=True, kw_only=True):
    """``GET /stats``; ``memories`` by status: live, superseded, forgotten, flagged, quarantined."""

    container_tag: str | None = None
    containers: int
    memories: dict[str, int] = msgspec.field(default_factory=dict)
    documents: int = 0
    log: LogHead


class ImportItem(_Answer, frozen=True, kw_only=True):
    """What became of one chain, document or profile of an imported file."""

    index: int
    status: str  # imported, skipped or failed
    source_id: str | None = None
    id: str | None = None
    versions: int | None = None
    reason: str | None = None
    message: str | None = None
    flagged: int = 0


class ImportReport(_Answer, frozen=True, kw_only=True):
    imported: int
    skipped: int
    failed: int
    embed_failures: int = 0
    memories: list[ImportItem] = msgspec.field(default_factory=list)
    documents: list[ImportItem] = msgspec.field(default_factory=list)
    profiles: list[ImportItem] = msgspec.field(default_factory=list)


__all__ = [
    "Candidate",
    "Chain",
    "ContainerErasure",
    "Destroyed",
    "Document",
    "DocumentErased",
    "DocumentHit",
    "DocumentPage",
    "DocumentWrite",
    "Health",
    "HealthLog",
    "ImportItem",
    "ImportReport",
    "Link",
    "LogHead",
    "MemoryErased",
    "MemoryHit",
    "MemoryPage",
    "MemoryVersion",
    "Metadata",
    "Profile",
    "ProfileErased",
    "Provenance",
    "Rating",
    "RecallFeedback",
    "RecallTrace",
    "RecallUsed",
    "Scalar",
    "SearchResult",
    "Source",
    "SplitRef",
    "Stats",
    "Trace",
    "TurnTrace",
    "WriteOutcome",
    "WriteResult",
]
