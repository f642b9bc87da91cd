"""The parts of a search that memories and documents share: the candidates from the vector
and full-text indexes, what a quarantine hides, the rerank stage, the per-stage clock, and
what a trace records of the query and the indexes it read."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
import time
from collections.abc import Callable, Hashable, Iterator, Mapping
from collections.abc import Set as AbstractSet

import cydifflib
import msgspec
import numpy as np
import numpy.typing as npt

from ...embedding.port import float32_bytes
from ...embedding.rerank import Reranker
from ...eventlog.events import Candidate, LearnedRanking
from ...projections.fulltext.analysis import index_terms, query_terms
from ...projections.fulltext.index import FullTextIndex
from ...projections.indexes import FullTextProjection, VectorProjection
from .messages import Hit, RecallRequest
from .ranking import POOL, Reranked, rerank, with_contexts


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


def asks_of_older(query: str, texts: Mapping[int, str]) -> Callable[[int, int], bool]:
    """Whether the query asks of the older text's thing and the newer speaks of another; then
    the newer is not placed above the older. That is so when the two texts share a frame and
    the newer swaps, in it, a word the query asks by for another: one or two words for one or
    two ("Alice Moreau moved to Lisbon" / "Alice Kowalski moved to Oslo", asked "where did
    Alice Moreau move?"; "Pin requests to 2.31 in atlas" / "Pin httpx to 0.27 in borealis",
    asked "which version is requests pinned to in atlas?").

    A newer text that leaves the asked word out, or says more in its place than a swap of a
    word or two ("the grocery budget went up to $550", "we moved our tickets over to Linear,
    Jira is gone"), carries the older one's thing over, as a correction does. Words are
    compared as the full-text index holds them (stemmed, stop words aside); the frame is
    aligned on every word. ``texts`` holds the texts of both sides, by label."""
    asked = frozenset(query_terms(query))
    if not asked:
        return lambda newer, older: False
    terms = {r: _terms(text) for r, text in texts.items()}
    sequences = {r: [w.lower() for w in _WORD.findall(text)] for r, text in texts.items()}

    def apart(newer: int, older: int) -> bool:
        asked_only_older = asked & (terms.get(older, frozenset()) - terms.get(newer, frozenset()))
        if not asked_only_older:
            return False
        a, b = sequences.get(older, []), sequences.get(newer, [])
        matcher = cydifflib.SequenceMatcher(None, a, b, autojunk=False)  # difflib's, compiled
        return any(
            tag == "replace"
            and i2 - i1 <= SWAPPED_WORDS
            and j2 - j1 <= SWAPPED_WORDS
            and asked_only_older & frozenset(index_terms(" ".join(a[i1:i2])))
            for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        )

    return apart


def answers_beyond_names(query: str, texts: Mapping[int, str]) -> Callable[[int], bool]:
    """Whether a text holds a word of the query other than a name: a word capitalised
    wherever it is written, in the query and in ``texts`` ("Kai"). A name says whose fact a
    text is, not which: "Kai takes the number 7 bus" shares only "Kai" with "Kai violin
    teacher", another fact about Kai, where a correction of the teacher speaks of the teacher
    or the violin."""
    asked = frozenset(query_terms(query))
    lower = {w.lower() for text in (query, *texts.values()) for w in _WORD.findall(text)}
    written_lower = {
        w.lower()
        for text in (query, *texts.values())
        for w in _WORD.findall(text)
        if not w[:1].isupper()
    }
    names = frozenset(term for word in lower - written_lower for term in index_terms(word))
    terms = {r: _terms(text) for r, text in texts.items()}
    return lambda label: bool((asked - names) & terms.get(label, frozenset()))


@functools.lru_cache(maxsize=4096)
def _terms(text: str) -> frozenset[str]:
    """A text's index terms, kept for the texts the last searches judged: the same head is
    judged again and again, by both rules above."""
    return frozenset(index_terms(text))


# At most this many words swapped for as many in a shared frame: a name and a surname, an
# identifier. A longer change is said otherwise, as a correction says it.
SWAPPED_WORDS = 2
_WORD = re.compile(r"\w+")
