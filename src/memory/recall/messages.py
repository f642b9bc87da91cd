"""What a recall is asked and what it answers: the request, a served hit, the result."""

from __future__ import annotations

from typing import Literal

import msgspec

from ...projections.documents.projection import ChunkRow
from ...projections.memories.rows import VersionRow
from ...projections.trust.rows import Carried

__all__ = [
    "AgentRerank",
    "AsRanked",
    "Hit",
    "Mode",
    "Origin",
    "RecallRequest",
    "RecallResult",
    "agent_reranked",
    "chunk_trace_id",
]

Origin = Literal["rest", "proxy", "mcp", "capture", "import"]
Mode = Literal["memories", "documents", "hybrid"]


class AsRanked(msgspec.Struct, frozen=True, kw_only=True):
    """How a recorded recall's learned stage ranked, for a replay to rank it the same way:
    the model it used (None: none) and the position it swapped with the next (None: none)."""

    digest: str | None
    explore: int | None


class RecallRequest(msgspec.Struct, frozen=True, kw_only=True):
    q: str
    container_tag: str | None = None
    limit: int = 10
    mode: Mode = "memories"
    recency: bool = True
    diversify: bool | None = None
    as_of: int | None = None  # record time, UTC ns: what was known then
    # Fact time, UTC ns: of each chain, the version observed last at or before it (what was
    # true then, by what is known now, or at ``as_of``).
    fact_as_of: int | None = None
    include_forgotten: bool = False
    # Rescore the head of the fused order with the cross-encoder; ``rerank_pool`` is how many
    # (None: the recall's configured pool).
    rerank: bool = False
    rerank_pool: int | None = None
    # With ``rerank``: rerank only if the reranker is installed, else serve unreranked and say
    # so in the trace (the agent-facing default), instead of refusing.
    rerank_if_installed: bool = False
    # Serve only memories whose carried trust (the least of their sources') is at least this.
    min_trust: float | None = None
    # The learned stage (``learned.py``): off, it serves the order without it and explores
    # nothing; ``as_ranked`` makes it rank as a recorded recall did.
    learned: bool = True
    as_ranked: AsRanked | None = None


AgentRerank = Literal["auto", "on", "off"]


def agent_reranked(
    request: RecallRequest, mode: AgentRerank, asked: bool | None, pool: int
) -> RecallRequest:
    """``request`` as an agent-facing search reranks: as the call asked when it did
    (``asked``: true reranks at the configured pool and is refused without the model, as on
    REST; false is the fast path), else as the server's ``mode`` says, at the agent ``pool``."""
    if asked is not None:
        return msgspec.structs.replace(request, rerank=asked)
    return msgspec.structs.replace(
        request, rerank=mode != "off", rerank_pool=pool, rerank_if_installed=mode == "auto"
    )


class Hit(msgspec.Struct, frozen=True, kw_only=True):
    """A served result: a memory version or a document chunk."""

    similarity: float
    score: float
    row: VersionRow | None = None
    chunk: ChunkRow | None = None
    rerank_score: float | None = None  # the cross-encoder's logit, when reranked
    # Memories linked as possibly updating this one, served above it (``memory.linked``).
    outdated_by: tuple[str, ...] = ()
    source: Carried | None = None  # a memory's writer, sources, trust and status

    @property
    def trace_id(self) -> str:
        if self.row is not None:
            return self.row.version_id
        assert self.chunk is not None
        return chunk_trace_id(self.chunk)


class RecallResult(msgspec.Struct, frozen=True, kw_only=True):
    trace_id: str
    hits: list[Hit]
    seq: int | None  # the recall event's seq; None while it waits for its group commit


def chunk_trace_id(chunk: ChunkRow) -> str:
    """How a trace names a chunk: documents do not version, so by document and index."""
    return f"{chunk.document_id}#{chunk.index}"
