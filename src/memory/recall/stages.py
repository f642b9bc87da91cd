"""The parts of a search that memories and documents share: the candidates from the vector
and full-text indexes, what a quarantine hides, the rerank stage, the per-stage clock, and
what a trace records of the query and the indexes it read."""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable, Hashable, Iterator
from collections.abc import Set as AbstractSet

import msgspec
import numpy as np
import numpy.typing as npt

from ...embedding.port import float32_bytes
from ...embedding.rerank import Reranker
from ...eventlog.events import Candidate, LearnedRanking
from ...projections.fulltext.index import FullTextIndex
from ...projections.indexes import FullTextProjection, VectorProjection
from ...projections.memories.rows import VersionRow
from .messages import Hit, RecallRequest
from .ranking import POOL, Reranked, folded_words, names_in, rerank, with_contexts


class Ranked(msgspec.Struct, kw_only=True):
    """One family's outcome: every candidate for the trace, and the served hits in order."""

    candidates: list[Candidate]
    hits: list[Hit]
    learned: LearnedRanking | None = None
    ranker: str | None = None  # the digest of the model that reordered it
    explore: int | None = None  # the position it swapped with the next


class Stopwatch:
    """Per-stage latency in ms: each ``lap`` is the time since the previous one, less the
    time spent ``apart`` (a stage timed on its own inside another)."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self._clock = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.ms[stage] = round((now - self._clock) * 1000, 3)
        self._clock = now

    @contextlib.contextmanager
    def apart(self, stage: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            spent = time.perf_counter() - started
            self.ms[stage] = round(self.ms.get(stage, 0.0) + spent * 1000, 3)
            self._clock += spent


class Judge:
    """The rerank stage of one search: the cross-encoder, the query, the pool, the clock."""

    def __init__(self, reranker: Reranker, query: str, pool: int, watch: Stopwatch) -> None:
        self.reranker = reranker
        self.query = query
        self.pool = pool
        self._watch = watch

    def rerank(self, order: list[int], texts: dict[int, str]) -> Reranked:
        """``order`` with the first ``pool`` labels that have a text (``texts``) in the
        cross-encoder's order, timed as the ``rerank`` stage."""
        head = [label for label in order[: self.pool] if label in texts]
        with self._watch.apart("rerank"):
            scores = self.reranker.score(self.query, [texts[label] for label in head])
        return rerank(order, dict(zip(head, scores, strict=True)))


def searched_seq(index: FullTextIndex) -> int:
    """Where the index's disk/tail boundary stood for this thread's search (now, if it was
    not searched: then it decided nothing)."""
    seq = index.searched_seq()
    return index.visible_seq if seq is None else seq


def vector_digest(vector: npt.NDArray[np.floating]) -> str:
    """sha256 of a query vector's float32 bytes: lets a replay prove it embedded the query
    exactly as the recall did, without storing the vector."""
    return hashlib.sha256(float32_bytes(vector)).hexdigest()


def marked(candidate: Candidate, distrusted: bool) -> Candidate:
    return msgspec.structs.replace(candidate, below_trust=True) if distrusted else candidate


def unhidden(
    allowed: AbstractSet[int],
    scope: Hashable | None,
    hidden_by: Callable[[str | None], AbstractSet[int]] | None,
    container_tag: str | None,
) -> tuple[AbstractSet[int], Hashable | None]:
    """``allowed`` without what a quarantine hides (``hidden_by``); a set so changed is not
    the one ``scope`` names."""
    hidden = hidden_by(container_tag) if hidden_by is not None else ()
    if not hidden or allowed.isdisjoint(hidden):
        return allowed, scope
    return frozenset(allowed) - frozenset(hidden), None


def live_scope(container_tag: str | None) -> Hashable:
    """The scope name of a container's live entries (every container's, for ``None``)."""
    return ("live", container_tag)


def index_candidates(
    vectors: VectorProjection,
    fulltext: tuple[FullTextProjection, FullTextProjection | None],
    request: RecallRequest,
    query: npt.NDArray[np.float32],
    allowed: AbstractSet[int],
    lap: Callable[[str], None],
    stage: str,
    scope: Hashable | None,
) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """Vector and BM25 candidates among ``allowed``; ``scope`` names the set ``allowed`` is
    (see ``VectorIndex.search``), if it is one that recurs. ``fulltext`` is the index of the
    texts and, if the family has one, the index of their contexts."""
    pool = max(POOL, request.limit * 5)
    by_vector = vectors.index.search(query, pool, allowed=allowed, scope=scope) if allowed else []
    lap(f"{stage}_vector")
    # The full-text index holds every version (superseded and forgotten ones too) and filters
    # only by container: ask for twice the pool so that filtering to the allowed versions
    # still leaves a full pool in the usual case.
    texts, contexts = fulltext
    wanted = 2 * pool
    found = texts.index.search(request.q, wanted, container=request.container_tag)
    if contexts is not None:
        in_contexts = contexts.index.search(request.q, wanted, container=request.container_tag)
        found = with_contexts(found, in_contexts)[:wanted]
    by_text = [(label, score) for label, score in found if label in allowed][:pool]
    lap(f"{stage}_bm25")
    return by_vector, by_text


def asks_of_older(query: str, linked: dict[int, VersionRow]) -> Callable[[int, int], bool]:
    """Whether the query names a thing the older text of a link names and the newer does not
    ("Alice Moreau" in the query, the older, not the newer): then it asks of the older one's
    thing, and the newer is not placed above it. ``linked`` holds the rows of both sides."""
    asked = names_in(query)
    if not asked:
        return lambda newer, older: False
    words = {r: folded_words(row.content or "") for r, row in linked.items()}

    def apart(newer: int, older: int) -> bool:
        only_older = words.get(older, frozenset()) - words.get(newer, frozenset())
        return bool(asked & only_older)

    return apart
