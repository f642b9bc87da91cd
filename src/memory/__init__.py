"""The domain: the write decision, chains, documents, recall and its ranking, the renderer of
injected context; ``Core`` composes the log, the projections and these services once.

This face is what the shells (REST, proxy, replay, portability, CLI) use: the services, the
requests and outcomes they take and give, and the read models' row types they show.
"""

from ..projections.documents.projection import ChunkRow, DocumentRow
from ..projections.memories.rows import ChainView, ImportRow, LinkRow, SplitRow, VersionRow
from ..projections.oversight import QuarantineRow, RollbackRow
from ..projections.traces import Rating, Trace, TurnTrace, VersionTrace
from ..projections.trust.rows import AgentScore, Carried, SignalRow, TrustParams
from .agents import Agents, Caller
from .core import Core
from .documents import DocumentOutcome, Ingest
from .lifecycle.chains import Chains
from .lifecycle.erasure import Erasure, ErasureReceipt
from .oversight.trust import Trust, scores_at, trust_params
from .recall.messages import (
    AgentRerank,
    AsRanked,
    Hit,
    Origin,
    RecallRequest,
    RecallResult,
    agent_reranked,
)
from .recall.ranking import RANKING
from .recall.render import (
    MEMORIES_RENDERER,
    MEMORY_RENDERERS,
    PROFILE_RENDERER,
    RenderedMemory,
    digest,
    injected_source,
    render_memories,
    render_profile,
)
from .recall.service import Recall
from .recall.usage import GRADES, MAX_FEEDBACK_REASON, Rated
from .world import MemoriesAt, World
from .writing.decision import Writes
from .writing.keyed import MAX_KEY, Keyed, KeyedWrites, check_key
from .writing.submitted import WriteOutcome
from .writing.versions import MAX_CONTENT, NewMemory

__all__ = [
    "GRADES",
    "MAX_CONTENT",
    "MAX_FEEDBACK_REASON",
    "MAX_KEY",
    "MEMORIES_RENDERER",
    "MEMORY_RENDERERS",
    "PROFILE_RENDERER",
    "RANKING",
    "AgentRerank",
    "AgentScore",
    "Agents",
    "AsRanked",
    "Caller",
    "Carried",
    "ChainView",
    "Chains",
    "ChunkRow",
    "Core",
    "DocumentOutcome",
    "DocumentRow",
    "Erasure",
    "ErasureReceipt",
    "Hit",
    "ImportRow",
    "Ingest",
    "Keyed",
    "KeyedWrites",
    "LinkRow",
    "MemoriesAt",
    "NewMemory",
    "Origin",
    "QuarantineRow",
    "Rated",
    "Rating",
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
    "VersionTrace",
    "World",
    "WriteOutcome",
    "Writes",
    "agent_reranked",
    "check_key",
    "digest",
    "injected_source",
    "render_memories",
    "render_profile",
    "scores_at",
    "trust_params",
]
