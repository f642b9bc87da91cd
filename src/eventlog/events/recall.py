"""Events of a recall: what was searched and served, what was injected into a prompt, what
helped and how much, what was captured."""

from __future__ import annotations

from typing import Literal

import msgspec

from .base import Event, Sealed


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """One recall candidate, kept whether or not it was served."""

    version_id: str
    similarity: float | None = None
    bm25: float | None = None
    fused: float = 0.0
    served: bool = False
    vector_rank: int | None = None
    bm25_rank: int | None = None
    score: float = 0.0
    below_floor: bool = False
    # Set for the candidates a rerank rescored (params ``rerank``): the cross-encoder's logit,
    # and its rank among them (1 = best).
    rerank_score: float | None = None
    rerank_rank: int | None = None
    below_trust: bool = False  # left out by the request's minTrust


class LearnedRanking(msgspec.Struct, frozen=True, kw_only=True):
    """What the learned ranker saw and said in a recall, by version id: the features
    (``projections/ranker/features.py``, in its FEATURES order) of each served memory, and
    its score of each candidate it reordered. Kept beside the candidates, not in them, so a
    recall without it costs its log record nothing."""

    features: dict[str, list[float]] = {}
    scores: dict[str, float] = {}


class RecallPerformed(Event, frozen=True, kw_only=True, tag="recall.performed"):
    """A recall ran; its id is the trace id."""

    recall_id: str
    origin: Literal["rest", "proxy", "mcp", "capture", "import"]
    container_tag: str | None
    query: Sealed
    embedder: str
    query_vector_digest: str | None = None  # sha256 of the query vector's float32 bytes
    view_seq: int | None = None  # the seq the read models had applied when it ranked
    index_seqs: dict[str, int] = {}  # full-text index -> the seq its searched commit covers
    candidates: list[Candidate] = []
    served: list[str] = []
    latency_ms: dict[str, float] = {}
    params: dict[str, str | int | float | bool | None] = {}
    learned: LearnedRanking | None = None


class InjectedSource(msgspec.Struct, frozen=True, kw_only=True):
    """What an injection said of a version's source: its writer, the trust it carried then
    (rounded as rendered), the detector's flags, whether it was captured."""

    agent_id: str
    trust: float
    flags: list[str] = []
    captured: bool = False


class ContextInjected(Event, frozen=True, kw_only=True, tag="context.injected"):
    """Recalled versions were rendered into an upstream request; only the digest is kept."""

    trace_id: str
    recall_id: str
    version_ids: list[str]
    renderer: str
    sent_digest: str
    sources: list[InjectedSource] = []  # one per version, for renderers that show them


class RecallUsed(Event, frozen=True, kw_only=True, tag="recall.used"):
    """An agent said which results of a recall it used: a trust signal, and later a ranking
    signal. It names versions by id, never their text; none used is a signal too."""

    recall_id: str
    container_tag: str | None = None
    memory_ids: list[str] = []
    version_ids: list[str] = []  # the served versions of those memories, in the same order


class RecallFeedback(Event, frozen=True, kw_only=True, tag="recall.feedback"):
    """An explicit rating of one served result; the ranker learns from it. ``grade`` is on the
    scale of ``memory/recall/usage.py`` (0 irrelevant to 3 the answer); the reason may be the
    user's own words, so it is sealed under the container's key, as the query is."""

    recall_id: str
    container_tag: str | None = None
    version_id: str
    memory_id: str
    grade: int
    reason: Sealed | None = None


class MemoryCaptured(Event, frozen=True, kw_only=True, tag="memory.captured"):
    """Auto-capture proposed a fact from a conversation (unverified)."""

    capture_id: str
    container_tag: str
    content: Sealed
    trace_id: str | None = None
    redactions: int = 0
    method: Literal["heuristic", "distilled"] = "heuristic"
