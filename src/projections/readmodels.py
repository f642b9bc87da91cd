"""Every read model of a data dir, built the one way: the server and a replay use the same set.

The runner order matters: an index applies an erase by asking its source projection, which
must already have applied the same records.
"""

from __future__ import annotations

from pathlib import Path

from ..eventlog import Sealer
from .agents import AgentProjection
from .documents.projection import DocumentProjection
from .indexes import (
    DocumentSource,
    FullTextProjection,
    MemoryContextSource,
    MemorySource,
    VectorProjection,
)
from .memories.projection import MemoryProjection
from .oversight import OversightProjection
from .ranker.projection import RankerProjection
from .runner import Projection
from .traces import TraceProjection
from .trust.projection import TrustProjection
from .trust.rows import TrustParams


class ReadModels:
    """The projections under ``root``; ``memories`` may be opened beforehand (the server
    needs it caught up to learn the pinned embedder before it can open the vector indexes)."""

    def __init__(
        self,
        root: Path,
        sealer: Sealer,
        dimension: int,
        *,
        memories: MemoryProjection | None = None,
        background_commits: bool = True,
        trust: TrustParams | None = None,
        embedder_digest: str | None = None,
    ) -> None:
        self.memories = memories or MemoryProjection(root / "memories.sqlite3", sealer)
        memory_source = MemorySource(sealer, self.memories)
        self.vectors = VectorProjection(
            "vectors", root / "vectors.hnsw", dimension, memory_source, digest=embedder_digest
        )
        self.fulltext = FullTextProjection(
            "fulltext", root / "fulltext", memory_source, background=background_commits
        )
        self.context_fulltext = FullTextProjection(
            "context-fulltext",
            root / "context-fulltext",
            MemoryContextSource(sealer, self.memories),
            background=background_commits,
        )
        self.documents = DocumentProjection(root / "documents.sqlite3", sealer)
        document_source = DocumentSource(sealer, self.documents, dimension)
        self.document_vectors = VectorProjection(
            "document-vectors",
            root / "document-vectors.hnsw",
            dimension,
            document_source,
            digest=embedder_digest,
        )
        self.document_fulltext = FullTextProjection(
            "document-fulltext",
            root / "document-fulltext",
            document_source,
            background=background_commits,
        )
        self.traces = TraceProjection(root / "traces.sqlite3", sealer)
        self.agents = AgentProjection(root / "agents.sqlite3")
        self.trust = TrustProjection(root / "trust.sqlite3", trust)
        self.oversight = OversightProjection(root / "oversight.sqlite3")
        self.ranker = RankerProjection(root / "ranker.sqlite3")

    def in_order(self) -> list[Projection]:
        """What a runner feeds, in the order it must feed them."""
        return [
            self.memories,
            self.documents,
            self.vectors,
            self.fulltext,
            self.context_fulltext,
            self.document_vectors,
            self.document_fulltext,
            self.traces,
            self.agents,
            self.trust,
            self.oversight,
            self.ranker,
        ]
