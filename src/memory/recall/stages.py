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
    asked = _asked(query)
    if not asked:
        return lambda newer, older: False
    terms = {r: _terms(text) for r, text in texts.items()}

    def apart(newer: int, older: int) -> bool:
        asked_only_older = asked & (terms.get(older, frozenset()) - terms.get(newer, frozenset()))
        if not asked_only_older:
            return False
        a, b = _sequence(texts.get(older, "")), _sequence(texts.get(newer, ""))
        matcher = cydifflib.SequenceMatcher(None, a, b, autojunk=False)  # difflib's, compiled
        return any(
            tag == "replace"
            and i2 - i1 <= SWAPPED_WORDS
            and j2 - j1 <= SWAPPED_WORDS
            and asked_only_older & frozenset(index_terms(" ".join(a[i1:i2])))
            for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        )

    return apart


def _names(query: str, texts: Mapping[int, str]) -> frozenset[str]:
    """The index terms of the names among the query's and ``texts``'s words: a word
    capitalised wherever it is written ("Kai", "Flinond")."""
    return _names_in((query, *sorted(texts.values())))


@functools.lru_cache(maxsize=256)
def _names_in(texts: tuple[str, ...]) -> frozenset[str]:
    """``_names`` of these texts, kept: both rules that read names ask for the same head."""
    words = [w for text in texts for w in _WORD.findall(text)]
    lower = {w.lower() for w in words}
    written_lower = {w.lower() for w in words if not w[:1].isupper()}
    return frozenset(term for word in lower - written_lower for term in _terms(word))


def answers_beyond_names(query: str, texts: Mapping[int, str]) -> Callable[[int], bool]:
    """Whether a text holds a word of the query other than a name: a word capitalised
    wherever it is written, in the query and in ``texts`` ("Kai"). A name says whose fact a
    text is, not which: "Kai takes the number 7 bus" shares only "Kai" with "Kai violin
    teacher", another fact about Kai, where a correction of the teacher speaks of the teacher
    or the violin."""
    asked = _asked(query)
    names = _names(query, texts)
    terms = {r: _terms(text) for r, text in texts.items()}
    return lambda label: bool((asked - names) & terms.get(label, frozenset()))


def names_only_older(query: str, texts: Mapping[int, str]) -> Callable[[int, int], bool]:
    """Whether the query names a thing (a name, as for ``answers_beyond_names``) that the
    older text names and the newer does not: then it asks of the older one's thing, and a
    newer text found close to it on meaning alone is not its new value ("Who owns the pet
    called Flinond?": "Sven's rabbit is called Flinond" before "Ben Florir is a product
    manager", which a static embedder finds as close for the likeness of two made-up
    names)."""
    asked = _asked(query) & _names(query, texts)
    if not asked:
        return lambda newer, older: False
    terms = {r: _terms(text) for r, text in texts.items()}
    return lambda newer, older: bool(
        asked & (terms.get(older, frozenset()) - terms.get(newer, frozenset()))
    )


@functools.lru_cache(maxsize=256)
def _asked(query: str) -> frozenset[str]:
    """A query's terms as the full-text index reads them, kept for the rules of one search."""
    return frozenset(query_terms(query))


@functools.lru_cache(maxsize=4096)
def _sequence(text: str) -> tuple[str, ...]:
    """A text's words, lower-cased, in order: the frame ``asks_of_older`` aligns."""
    return tuple(w.lower() for w in _WORD.findall(text))


@functools.lru_cache(maxsize=4096)
def _terms(text: str) -> frozenset[str]:
    """A text's index terms, kept for the texts the last searches judged: the same head is
    judged again and again, by both rules above."""
    return frozenset(index_terms(text))


# At most this many words swapped for as many in a shared frame: a name and a surname, an
# identifier. A longer change is said otherwise, as a correction says it.
SWAPPED_WORDS = 2
_WORD = re.compile(r"\w+")
