"""The domain: the write decision, chains, documents, recall and its ranking, the renderer of
injected context; ``Core`` composes the log, the projections and these services once.

This face is what the shells (REST, proxy, replay, portability, CLI) use: the services, the
requests and outcomes they take and give, and the read models' row types they show.
"""

from ..projections.documents import ChunkRow, DocumentProjection, DocumentRow
from ..projections.memories import MemoryProjection
from ..projections.memory_rows import ChainView, ImportRow, LinkRow, SplitRow, VersionRow
from ..projections.oversight import QuarantineRow, RollbackRow
from ..projections.traces import Trace, TurnTrace
from ..projections.trust_rows import AgentScore, Carried, SignalRow, TrustParams
from .agents import Agents, Caller
from .chains import Chains
from .core import Core
from .documents import DocumentOutcome, Ingest
from .erasure import Erasure, ErasureReceipt
from .ranking import RANKING
from .recall import Recall
from .recall_messages import Hit, Origin, RecallRequest, RecallResult
from .render import (
    MEMORIES_RENDERER,
    MEMORY_RENDERERS,
    PROFILE_RENDERER,
    RenderedMemory,
    digest,
    injected_source,
    render_memories,
    render_profile,
)
from .submitted import WriteOutcome
from .trust import Trust, scores_at, trust_params
from .versions import NewMemory
from .world import MemoriesAt, World
from .writes import Writes

__all__ = [
    "MEMORIES_RENDERER",
    "MEMORY_RENDERERS",
    "PROFILE_RENDERER",
    "RANKING",
    "AgentScore",
    "Agents",
    "Caller",
    "Carried",
    "ChainView",
    "Chains",
    "ChunkRow",
    "Core",
    "DocumentOutcome",
    "DocumentProjection",
    "DocumentRow",
    "Erasure",
    "ErasureReceipt",
    "Hit",
    "ImportRow",
    "Ingest",
    "LinkRow",
    "MemoriesAt",
    "MemoryProjection",
    "NewMemory",
    "Origin",
    "QuarantineRow",
    "Recall",
    "RecallRequest",
    "RecallResult",
    "RenderedMemory",
    "RollbackRow",
    "SignalRow",
    "SplitRow",
    "Trace",
    "Trust",
    "TrustParams",
    "TurnTrace",
    "VersionRow",
    "World",
    "WriteOutcome",
    "Writes",
    "digest",
    "injected_source",
    "render_memories",
    "render_profile",
    "scores_at",
    "trust_params",
]
