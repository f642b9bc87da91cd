"""The ranking rules of recall, as pure functions of the candidates and their constants.

Nothing here reads an index or a clock: recall gathers the two candidate lists, the dates and
the vectors, and these decide the order. So a recorded trace can be ranked again exactly, and
each rule is tested on its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TypeVar

import msgspec
import numpy as np
import numpy.typing as npt

from ...eventlog.events import Candidate
from ...settings import Settings

T = TypeVar("T")

# Reciprocal rank fusion constant. 60 (the usual default) flattens the top of both lists: rank 1
# and rank 5 then differ by 6%, so a keyword-only or vector-only hit at rank 1 hardly beats noise
# found by both. With 10 they differ by 27% (bench/retrieval.py: recall_all@5 +0.03 to +0.06 on
# LoCoMo and LongMemEval, both tiers; docs/recall.md has the figures), with 8 by 31%.
RRF_K = 8
# The vector list's share of the fusion beside the BM25 list's 1.0. Words shared with the query
# are the stronger evidence with either embedder: at 0.7 (and RRF_K 8 rather than 10) LoCoMo
# recall_all@5 rose by 0.02 to 0.03 on both tiers (to 0.495 fast, 0.502 quality), LongMemEval
# turns stayed where they were (bench/retrieval.py; docs/recall.md).
VECTOR_WEIGHT = 0.7
RECENCY_HALF_LIFE_DAYS = 30.0
RECENCY_WEIGHT = 0.25  # share of the score that decays with age
# MMR relevance weight. It reorders only, but at 0.7 a second piece of evidence that resembles
# the first (two turns of one story) was pushed out of the top 5 (LongMemEval recall_all@5 0.62
# -> 0.56); at 0.9 only near-duplicates move, and the figures are those without MMR.
MMR_LAMBDA = 0.9
# Diversity reorders near-duplicates only: a memory is redundant with one placed above it only
# at this cosine or more. Two facts about one person ("Alice moved to Berlin", "Alice is
# allergic to peanuts") share a name and reach 0.8 with MiniLM; two wordings of one fact 0.9
# and more. Under it, MMR put a fact that does not answer the question above one that does.
NEAR_DUPLICATE = 0.9
# When recency is on, a candidate in the top AGREED_RANKS of both the vector and the BM25 list
# moves above such a candidate at least UPDATE_GAP_NS older (see newer_above_older_among_agreed):
# on LongMemEval knowledge-update questions the newer value then ranks above the older one in
# 0.91 of cases instead of 0.79 (fast tier), recall unchanged, hit@1 0.01 lower. With stemmed
# BM25 terms, 3 ranks gave 0.875 and 5 give 0.91 again, recall unchanged.
AGREED_RANKS = 5
UPDATE_GAP_NS = 86_400 * 1_000_000_000  # one day: statements of one conversation keep their order
# ...unless both are single statements of one thing (related in meaning: their cosine reaches
# the embedder's recall floor): a correction said seconds after what it corrects. Only single
# statements: two chat turns of one conversation are related by their topic alone
# (LongMemEval's turns, 64 words at the median: hit@1 0.609 -> 0.445 when they counted). 30
# words holds the labelled statements (20 at most, tests/data/write_pairs) and 99% of the
# third-party facts measured (bench/third_party_pairs.py: BEAM, memtrust, SGD); LongMemEval's
# hit@1 was the same at bounds of 20 to 40.
STATEMENT_WORDS = 30
# Two such statements answer a question alike when the question finds the newer about as close
# in meaning as the older: its cosine to the query within this share of the span from the
# embedder's floor to 1 below the older's (0.1 of cosine on the fast tier, whose floor is 0.35;
# 0.03 on e5, whose cosines crowd above 0.8). Then the newer wins however it is worded: the
# only rare word of a story, or a reply that shares no word with the question ("No, I want it
# on Thursday next week"). A fact of another thing is further from the question than the
# fact it asks of ("Kai takes the number 7 bus" beside "Kai's violin teacher is called Mira",
# asked "Kai violin teacher"). Measured on third-party corrections said 30 seconds later
# (bench/third_party_corrections.py) and LoCoMo's turns, which are seconds apart within a
# session: docs/recall.md, step 9.
ANSWERS_ALIKE = 0.15
# The version of the ranking rules: the fusion constants above and the full-text analysis. A
# recall records it, so that a replay by a build that ranks otherwise reports the trace as not
# verifiable by that build, not as differing. 1 (recorded as no version): equal fusion
# weights, RRF 10, tantivy's default tokenizer. 2: stemming, stop words and question words,
# the vector list weighted 0.7, RRF 8, agreed candidates from the top five. 3: diversity among
# near-duplicates only; a linked newer memory among the candidates placed above the older one
# served, unless the query names what only the older one names. 4: of two agreed single
# statements related in meaning (the embedder's floor), the newer first however close their
# dates; with no keyword match, the vector list's top five are the agreed ones; the query asks
# of the older one's thing when the newer swaps an asked word for another (stages.py). 5: of
# two single statements within a day among the first five served, the newer first when the
# question finds it about as close as the older (``ANSWERS_ALIKE``), whatever its words.
RANKING = 5
POOL = 50  # candidates taken from each index (at least; five times the limit when larger)
# A memory's keyword score is the BM25 of its content plus this share of the BM25 of its
# context (what it answers: a reply is found by the words of the question it answers). At 0.5
# LoCoMo recall_all@5 rose from 0.497 to 0.527 ranked offline on the benchmark's candidates
# (0.4: 0.520, 0.6: 0.523); the benchmark then measured 0.495 -> 0.519 on the fast tier and
# 0.502 -> 0.533 on the quality tier (docs/recall.md).
CONTEXT_WEIGHT = 0.5
# How many of the fused head a rerank rescores, unless the request says: the setting's default
# (``MNEMOLOG_RERANK_POOL``; docs/recall.md#rerank has the curve it was chosen from).
RERANK_POOL = Settings().rerank_pool
_NS_PER_DAY = 86_400 * 1_000_000_000


class Fused(msgspec.Struct, kw_only=True):
    label: int
    similarity: float | None
    bm25: float | None
    vector_rank: int | None
    bm25_rank: int | None
    fused: float
    score: float
    below_floor: bool

    def candidate(self, trace_id: str, rerank: Reranked | None = None) -> Candidate:
        return Candidate(
            version_id=trace_id,
            similarity=self.similarity,
            bm25=self.bm25,
            fused=self.fused,
            score=self.score,
            vector_rank=self.vector_rank,
            bm25_rank=self.bm25_rank,
            below_floor=self.below_floor,
            rerank_score=None if rerank is None else rerank.scores.get(self.label),
            rerank_rank=None if rerank is None else rerank.ranks.get(self.label),
        )


class Reranked(msgspec.Struct, frozen=True, kw_only=True):
    """A rerank's outcome: the new order, and each rescored label's score and rank (1 = the
    cross-encoder's best)."""

    order: list[int]
    scores: dict[int, float]
    ranks: dict[int, int]

    def relevance(self) -> dict[int, float]:
        """The cross-encoder's logits scaled to [0, 1] over the rescored head (the best 1), as
        MMR weighs relevance. A logit can be negative, so it cannot be scaled to the best one
        alone; and a sigmoid saturates: logits of 4.6 and 7.2, a plain and a clear answer,
        became 0.990 and 0.999, and MMR then reordered relevant memories by redundancy alone."""
        if not self.scores:
            return {}
        low, high = min(self.scores.values()), max(self.scores.values())
        span = high - low
        return {
            label: 1.0 if span == 0 else (score - low) / span
            for label, score in self.scores.items()
        }


def rerank(order: Sequence[int], scores: Mapping[int, float]) -> Reranked:
    """The labels of ``order`` that ``scores`` holds (the head the cross-encoder rescored)
    first, by its score (equal scores keep their order), then the others in their order."""
    position = {label: i for i, label in enumerate(order)}
    head = sorted(
        (label for label in order if label in scores),
        key=lambda label: (-scores[label], position[label]),
    )
    rest = [label for label in order if label not in scores]
    return Reranked(
        order=head + rest,
        scores={label: scores[label] for label in head},
        ranks={label: rank for rank, label in enumerate(head, start=1)},
    )


def with_contexts(
    found: list[tuple[int, float]], in_contexts: list[tuple[int, float]]
) -> list[tuple[int, float]]:
    """The keyword list with each label's context score added at ``CONTEXT_WEIGHT``, best
    first (equal scores by label)."""
    if not in_contexts:
        return found
    scores = dict(found)
    for label, score in in_contexts:
        scores[label] = scores.get(label, 0.0) + CONTEXT_WEIGHT * score
    return sorted(scores.items(), key=lambda hit: (-hit[1], hit[0]))


def fuse(
    by_vector: Sequence[tuple[int, float]],
    by_text: Sequence[tuple[int, float]],
    known: Sequence[int],
    weight: Callable[[int], float],
    floor: float,
) -> list[Fused]:
    """Reciprocal rank fusion of the two lists (the vector list's share weighted by
    ``VECTOR_WEIGHT``), times ``weight``, best first; ``known`` are the labels still
    resolvable (a label erased since the index answered is dropped). A candidate only the
    vector list found is marked below the floor under the embedder's ``floor`` cosine."""
    vector_rank = {label: i + 1 for i, (label, _) in enumerate(by_vector)}
    text_rank = {label: i + 1 for i, (label, _) in enumerate(by_text)}
    similarity = dict(by_vector)
    bm25 = dict(by_text)
    fused: list[Fused] = []
    for label in known:
        rrf = 0.0
        if label in vector_rank:
            rrf += VECTOR_WEIGHT / (RRF_K + vector_rank[label])
        if label in text_rank:
            rrf += 1.0 / (RRF_K + text_rank[label])
        fused.append(
            Fused(
                label=label,
                similarity=similarity.get(label),
                bm25=bm25.get(label),
                vector_rank=vector_rank.get(label),
                bm25_rank=text_rank.get(label),
                fused=rrf,
                score=rrf * weight(label),
                below_floor=label not in text_rank and similarity.get(label, 0.0) < floor,
            )
        )
    fused.sort(key=lambda f: (-f.score, f.label))
    return fused


def agreed_at_top(fused: Sequence[Fused]) -> set[int]:
    """The candidates both indexes rank in their top ``AGREED_RANKS``; when no keyword of the
    query matched any memory, those the vector list ranks there (it is then the only
    evidence, and every list that found anything agrees)."""
    keywords = any(f.bm25_rank is not None for f in fused)
    return {
        f.label
        for f in fused
        if f.vector_rank is not None
        and f.vector_rank <= AGREED_RANKS
        and (not keywords or (f.bm25_rank is not None and f.bm25_rank <= AGREED_RANKS))
    }


def newer_above_older_among_agreed(
    order: list[int],
    agreed: AbstractSet[int],
    observed: Mapping[int, int],
    close: Callable[[int, int], bool] = lambda newer, older: False,
) -> list[int]:
    """Each candidate that is ``agreed`` (both indexes rank it in their top
    ``AGREED_RANKS``) or among the first ``AGREED_RANKS`` of ``order`` moves just above the
    first such candidate placed higher that it is newer than: two agreed ones by at least
    ``UPDATE_GAP_NS``; any two by less than that when they are ``close`` (the newer a new
    statement of what the older says, for this question).

    When the meaning and the words of several memories answer the query best, the newer
    statement is the one to believe: an update ("I have 25 postcards now") above the value it
    replaces ("I have 10 postcards"), whatever the days between them. A correction said
    seconds later in the same conversation ("sorry, the meeting moved to 3pm") is such an
    update too, when ``close`` says the two answer the question alike; other statements of
    the same conversation keep their order by relevance. These candidates sit at the very top
    of the fused list, so what is in the top five rarely changes.
    """
    considered = set(agreed) | set(order[:AGREED_RANKS])
    if len(considered) < 2:
        return order
    reordered = list(order)
    for label in [r for r in order if r in considered]:
        at = reordered.index(label)
        when = observed[label]
        for place in range(at):
            other = reordered[place]
            if other not in considered:
                continue
            gap = when - observed[other]
            if (gap >= UPDATE_GAP_NS and label in agreed and other in agreed) or (
                0 < gap < UPDATE_GAP_NS and close(label, other)
            ):
                reordered.insert(place, reordered.pop(at))
                break
    return reordered


def linked_newer_first(
    order: list[int],
    links: Sequence[tuple[int, int]],
    limit: int,
    apart: Callable[[int, int], bool] = lambda newer, older: False,
) -> list[int]:
    """Each (newer, older) pair of ``links`` whose older one is served (in the first
    ``limit`` of ``order``) and whose newer one is a candidate below it: the newer moves just
    above the older. A memory that may update another (``memory.linked``) is then read
    first, with the older one right after it to judge by, at every limit. Unless
    ``apart(newer, older)``: the question asks of something only the older one names."""
    if not links:
        return order
    reordered = list(order)
    for newer, older in links:
        if newer not in reordered or older not in reordered:
            continue
        at, above = reordered.index(newer), reordered.index(older)
        if above < limit and at > above and not apart(newer, older):
            reordered.insert(above, reordered.pop(at))
    return reordered


def is_statement(text: str) -> bool:
    """Whether ``text`` is short enough to be read as one statement (``STATEMENT_WORDS``)."""
    return len(_WORD.findall(text)) <= STATEMENT_WORDS


_WORD = re.compile(r"\w+")


def recency_weight(observed_at: int, reference: int) -> float:
    """The share of a score kept at an age: ``1 - RECENCY_WEIGHT`` of it always, the rest
    halving every ``RECENCY_HALF_LIFE_DAYS`` before ``reference`` (UTC ns)."""
    age_days = max(0.0, (reference - observed_at) / _NS_PER_DAY)
    decay = float(0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS))
    return (1.0 - RECENCY_WEIGHT) + RECENCY_WEIGHT * decay


def mmr(
    ranked: list[int],
    score: Mapping[int, float],
    cosines: npt.NDArray[np.float32],
    needed: int,
    keep: AbstractSet[int],
) -> list[int]:
    """Maximal marginal relevance: reorder so near-duplicates do not crowd the top.

    It only reorders: relevance is the fused score (scaled to the best one), redundancy the
    highest cosine (``cosines``, ranked by ranked) to a label already placed, counted only
    from ``NEAR_DUPLICATE`` up (others are no redundancy at all). Placing stops
    once ``needed`` are placed and so is every label of ``keep`` among ``ranked``: what follows
    (the caller keeps it in its fused order) can no longer reach the answer.
    """
    if len(ranked) < 3:
        return ranked
    cosines = np.where(cosines >= NEAR_DUPLICATE, cosines, 0.0)
    unplaced = set(keep) & set(ranked)
    relevance = np.asarray([score[r] for r in ranked], dtype=np.float64)
    relevance /= relevance.max() or 1.0
    redundancy = np.zeros(len(ranked), dtype=np.float64)
    placed = np.zeros(len(ranked), dtype=bool)
    chosen: list[int] = []
    for _ in ranked:
        if len(chosen) >= needed and not unplaced:
            break
        value = MMR_LAMBDA * relevance - (1.0 - MMR_LAMBDA) * redundancy
        value[placed] = -np.inf
        best = int(np.argmax(value))  # the first of equals: the better-ranked one
        chosen.append(ranked[best])
        unplaced.discard(ranked[best])
        placed[best] = True
        np.maximum(redundancy, cosines[best], out=redundancy)
    return chosen


def interleave(lists: list[list[T]], score: Callable[[T], float]) -> list[T]:
    """One list from several served lists, by reciprocal rank (a single list is kept as is);
    equal ranks by ``score``, then by list."""
    if len(lists) == 1:
        return lists[0]
    scored = [
        (1.0 / (RRF_K + position), n, position, item)
        for n, items in enumerate(lists)
        for position, item in enumerate(items, start=1)
    ]
    scored.sort(key=lambda s: (-s[0], -score(s[3]), s[1], s[2]))
    return [item for *_, item in scored]
