"""The ranking rules alone: pure functions of candidate lists, checked by example and by
property (fusion is deterministic, MMR and newer-above-older only reorder, interleaving keeps
each list's order)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemolog.memory.recall.ranking import (
    AGREED_RANKS,
    CONTEXT_WEIGHT,
    RECENCY_HALF_LIFE_DAYS,
    RECENCY_WEIGHT,
    RRF_K,
    STATEMENT_WORDS,
    UPDATE_GAP_NS,
    VECTOR_WEIGHT,
    agreed_at_top,
    fuse,
    interleave,
    is_statement,
    linked_newer_first,
    mmr,
    newer_above_older_among_agreed,
    recency_weight,
    with_contexts,
)
from mnemolog.memory.recall.stages import answers_beyond_names, asks_of_older, names_only_older

DAY = 86_400 * 1_000_000_000

# A ranked list of distinct labels with scores, best first.
ranked_lists = st.lists(st.integers(0, 40), unique=True, max_size=15).map(
    lambda labels: [(label, 1.0 - n / 100) for n, label in enumerate(labels)]
)


def test_fusion_weighs_each_list_by_reciprocal_rank() -> None:
    fused = fuse([(1, 0.9), (2, 0.8)], [(2, 7.0), (3, 5.0)], [1, 2, 3], lambda _: 1.0, 0.25)
    by_label = {f.label: f for f in fused}
    assert by_label[2].fused == pytest.approx(VECTOR_WEIGHT / (RRF_K + 2) + 1 / (RRF_K + 1))
    assert by_label[1].fused == pytest.approx(VECTOR_WEIGHT / (RRF_K + 1))
    assert by_label[3].fused == pytest.approx(1 / (RRF_K + 2))
    assert [f.label for f in fused] == [2, 3, 1]  # found by both; then BM25 outweighs vectors
    assert (by_label[2].vector_rank, by_label[2].bm25_rank) == (2, 1)
    assert by_label[3].similarity is None and by_label[1].bm25 is None


def test_the_floor_drops_only_weak_vector_only_candidates() -> None:
    floor = 0.8  # the embedder's own (e5's; MiniLM's is 0.25)
    fused = fuse(
        [(1, floor - 0.01), (2, floor - 0.01), (3, floor)],
        [(2, 1.0)],
        [1, 2, 3],
        lambda _: 1,
        floor,
    )
    below = {f.label: f.below_floor for f in fused}
    assert below == {1: True, 2: False, 3: False}  # a keyword match is served whatever its cosine


def test_fusion_multiplies_by_the_weight_and_drops_unknown_labels() -> None:
    fused = fuse([(1, 0.9), (2, 0.8)], [], [2], lambda label: 0.5, 0.25)
    assert [f.label for f in fused] == [2]
    assert fused[0].score == pytest.approx(0.5 * fused[0].fused)


@given(ranked_lists, ranked_lists, st.data())
def test_fusion_is_deterministic_whatever_the_order_of_the_known_labels(
    by_vector: list[tuple[int, float]], by_text: list[tuple[int, float]], data: st.DataObject
) -> None:
    known = sorted({label for label, _ in by_vector} | {label for label, _ in by_text})
    shuffled = data.draw(st.permutations(known))
    first = fuse(by_vector, by_text, known, lambda label: 1.0 / (1 + label % 3), 0.25)
    again = fuse(by_vector, by_text, shuffled, lambda label: 1.0 / (1 + label % 3), 0.25)
    assert first == again
    scores = [f.score for f in first]
    assert scores == sorted(scores, reverse=True)


def test_agreed_candidates_are_in_the_top_of_both_lists() -> None:
    vector = [(label, 1.0) for label in range(10)]
    text = [(label, 1.0) for label in reversed(range(10))]
    fused = fuse(vector, text, list(range(10)), lambda _: 1.0, 0.25)
    # label L is vector rank L+1 and BM25 rank 10-L: both within AGREED_RANKS only in between
    expected = {L for L in range(10) if L + 1 <= AGREED_RANKS and 10 - L <= AGREED_RANKS}
    assert agreed_at_top(fused) == expected


def test_the_newer_of_two_agreed_statements_moves_up() -> None:
    observed = {1: 10 * DAY, 2: 10 * DAY + UPDATE_GAP_NS, 3: 0, 4: 30 * DAY}
    # 2 is a day newer than 1; 3 is not agreed; 4 is agreed and newest of all.
    assert newer_above_older_among_agreed([1, 3, 2, 4], {1, 2, 4}, observed) == [4, 2, 1, 3]
    same_day = {1: 10 * DAY, 2: 10 * DAY + UPDATE_GAP_NS - 1}
    assert newer_above_older_among_agreed([1, 2], {1, 2}, same_day) == [1, 2]


def test_with_no_keyword_match_the_top_of_the_vector_list_is_agreed() -> None:
    """Every list that found anything agrees: with no keyword of the query in any memory,
    the vector list is the only evidence."""
    fused = fuse([(label, 1.0) for label in range(8)], [], list(range(8)), lambda _: 1.0, 0.0)
    assert agreed_at_top(fused) == set(range(AGREED_RANKS))


def test_a_close_newer_statement_moves_up_seconds_later() -> None:
    """A correction said seconds after what it corrects: no day between them, but the two are
    statements of one thing (``close``), so the newer is the one to believe."""
    observed = {1: 10 * DAY, 2: 10 * DAY + 30 * 10**9, 3: 10 * DAY + 60 * 10**9}
    assert newer_above_older_among_agreed(
        [1, 2, 3], {1, 2, 3}, observed, lambda newer, older: {newer, older} == {1, 3}
    ) == [3, 1, 2]
    # An older one is never placed above a newer one, however close.
    assert newer_above_older_among_agreed([3, 1], {1, 3}, observed, lambda n, o: True) == [3, 1]
    # Not close: the seconds keep their order by relevance.
    assert newer_above_older_among_agreed([1, 2, 3], {1, 2, 3}, observed) == [1, 2, 3]


def test_a_close_newer_statement_in_the_first_five_moves_up_though_not_agreed() -> None:
    """A correction that shares no word with the question is in no keyword list, so it is not
    agreed; among the first five served it still moves above what it corrects when the two
    are close, within a day. A day or more apart, only agreed ones move."""
    observed = {1: 10 * DAY, 2: 10 * DAY + 30 * 10**9, 3: 11 * DAY, 9: 12 * DAY}
    close = lambda newer, older: (newer, older) in {(2, 1), (3, 1), (9, 1)}  # noqa: E731
    assert newer_above_older_among_agreed([1, 2], {1}, observed, close) == [2, 1]
    # 3 is a day after 1: not agreed, so the one-day rule does not apply, and ``close`` is for
    # statements of one day only.
    assert newer_above_older_among_agreed([1, 3], {1}, observed, close) == [1, 3]
    # Beyond the first five and not agreed: left where it is.
    order = [1, 4, 5, 6, 7, 2]
    assert (
        newer_above_older_among_agreed(order, {1}, observed | dict.fromkeys(range(4, 8), 0), close)
        == order
    )


def test_a_statement_is_at_most_a_sentence_or_two() -> None:
    assert is_statement("I don't live in Boston anymore, I live in Denver.")
    assert is_statement(" ".join(["word"] * STATEMENT_WORDS))
    assert not is_statement(" ".join(["word"] * (STATEMENT_WORDS + 1)))


@given(
    st.lists(st.integers(0, 30), unique=True, max_size=12),
    st.sets(st.integers(0, 30)),
    st.lists(st.integers(0, 60), min_size=31, max_size=31),
)
def test_newer_above_older_only_reorders_agreed_ones(
    order: list[int], agreed: set[int], days: list[int]
) -> None:
    observed = {label: days[label] * DAY for label in range(31)}
    moved = newer_above_older_among_agreed(order, agreed, observed)
    assert sorted(moved) == sorted(order)
    others = [label for label in order if label not in agreed]
    assert [label for label in moved if label not in agreed] == others


def test_mmr_moves_a_near_duplicate_below_a_different_candidate() -> None:
    ranked = [1, 2, 3]
    score = {1: 1.0, 2: 0.99, 3: 0.98}
    cosines = np.asarray([[1, 1, 0], [1, 1, 0], [0, 0, 1]], dtype=np.float32)
    assert mmr(ranked, score, cosines, 3, set()) == [1, 3, 2]


def test_mmr_leaves_alone_what_is_not_a_near_duplicate() -> None:
    """Two facts about one person are alike (cosine 0.8) but not the same fact: diversity
    does not reorder them, so a fact that does not answer never rises above one that does."""
    ranked = [1, 2, 3]
    score = {1: 1.0, 2: 0.99, 3: 0.98}
    cosines = np.asarray([[1, 0.8, 0.3], [0.8, 1, 0.3], [0.3, 0.3, 1]], dtype=np.float32)
    assert mmr(ranked, score, cosines, 3, set()) == [1, 2, 3]


def test_a_linked_newer_candidate_moves_above_the_older_served_at_any_limit() -> None:
    order = [7, 3, 9, 4, 8]  # 8 may update 3; 9 may update 4
    links = [(8, 3), (9, 4)]
    assert linked_newer_first(order, links, 2) == [7, 8, 3, 9, 4]
    assert linked_newer_first(order, links, 5) == [7, 8, 3, 9, 4]
    # An older one not served is left where it is, and so is its newer one.
    assert linked_newer_first([7, 1, 3, 8], [(8, 3)], 2) == [7, 1, 3, 8]
    # A newer one already above stays.
    assert linked_newer_first([8, 3], [(8, 3)], 1) == [8, 3]


def test_a_link_is_left_alone_when_the_query_asks_of_the_older_ones_thing() -> None:
    order = [3, 8]
    assert linked_newer_first(order, [(8, 3)], 2, lambda newer, older: True) == [3, 8]


@given(
    st.lists(st.integers(0, 100), unique=True, min_size=1, max_size=12),
    st.integers(1, 12),
    st.integers(0, 2**32 - 1),
)
def test_mmr_only_reorders(ranked: list[int], needed: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(len(ranked), 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    score = {label: float(s) for label, s in zip(ranked, rng.random(len(ranked)), strict=True)}
    placed = mmr(ranked, score, vectors @ vectors.T, needed, set())
    assert len(set(placed)) == len(placed) and set(placed) <= set(ranked)
    assert len(placed) == (len(ranked) if len(ranked) < 3 else min(needed, len(ranked)))


def test_mmr_keeps_placing_until_the_kept_labels_are_placed() -> None:
    ranked = [1, 2, 3, 4, 5]
    score = {label: 1.0 - label / 10 for label in ranked}
    cosines = np.eye(5, dtype=np.float32)
    assert mmr(ranked, score, cosines, 2, {5}) == [1, 2, 3, 4, 5]
    assert mmr(ranked, score, cosines, 2, set()) == [1, 2]


@given(st.lists(st.lists(st.integers(0, 1000), unique=True, max_size=8), min_size=1, max_size=3))
def test_interleaving_keeps_each_lists_order(lists: list[list[int]]) -> None:
    tagged = [[(n, item) for item in items] for n, items in enumerate(lists)]
    merged = interleave(tagged, lambda pair: float(pair[1] % 7))
    assert sorted(merged) == sorted(pair for items in tagged for pair in items)
    for n, items in enumerate(tagged):
        assert [pair for pair in merged if pair[0] == n] == items
    if len(lists) == 1:
        assert merged == tagged[0]


def test_interleaving_breaks_equal_ranks_by_score() -> None:
    assert interleave([["a"], ["b"]], {"a": 1.0, "b": 2.0}.__getitem__) == ["b", "a"]


def test_a_context_adds_its_share_of_bm25() -> None:
    found = [(1, 4.0), (2, 3.0)]
    merged = with_contexts(found, [(2, 4.0), (3, 1.0)])
    assert merged == [(2, 3.0 + CONTEXT_WEIGHT * 4.0), (1, 4.0), (3, CONTEXT_WEIGHT * 1.0)]
    assert with_contexts(found, []) is found


def test_recency_keeps_a_floor_and_halves_the_rest_each_half_life() -> None:
    now = 1000 * DAY
    half_life = int(RECENCY_HALF_LIFE_DAYS * DAY)
    assert recency_weight(now, now) == pytest.approx(1.0)
    assert recency_weight(now + DAY, now) == pytest.approx(1.0)  # from the future: not younger
    assert recency_weight(now - half_life, now) == pytest.approx(1.0 - RECENCY_WEIGHT / 2)
    assert recency_weight(0, now) == pytest.approx(1.0 - RECENCY_WEIGHT, abs=1e-6)


def test_a_question_asks_of_the_older_ones_thing_when_the_newer_swaps_an_asked_word() -> None:
    """Two texts on one frame, the newer swapping a word the question asks by for another, are
    two things: the question asks of the older. A newer text that leaves that word out, or
    says more in its place, carries the older one's thing over, as a correction does."""
    texts = {
        1: "Pin requests to 2.31 in atlas because the license changed upstream.",
        2: "Pin httpx to 0.27 in borealis because the license changed upstream.",
        3: "Alice Moreau moved to Lisbon.",
        4: "Alice Kowalski moved to Oslo.",
        5: "Our team tracks its tickets in Jira.",
        6: "We moved our tickets over to Linear, Jira is gone now.",
        7: "Alexis and I agreed on a $500 monthly budget for groceries.",
        8: "The grocery budget was increased to $550 monthly starting September 15.",
    }
    pins = asks_of_older("Which version is requests pinned to in atlas?", texts)
    assert pins(2, 1)
    assert not pins(1, 2)  # the question's words are in 1: nothing of it is swapped away
    assert asks_of_older("Where did Alice Moreau move?", texts)(4, 3)
    assert not asks_of_older("Where did Alice move?", texts)(4, 3)  # the question names both
    assert not asks_of_older("Where does our team track its tickets?", texts)(6, 5)
    assert not asks_of_older("What grocery budget have Alexis and I agreed on?", texts)(8, 7)
    assert not asks_of_older("what is it", texts)(2, 1)  # nothing asked by


def test_a_text_answers_a_question_beyond_names_when_it_holds_another_of_its_words() -> None:
    texts = {
        1: "Kai's violin teacher is called Mira",
        2: "Kai takes the number 7 bus",
        3: "Mira retired, so Kai's new teacher is Tom",
    }
    answers = answers_beyond_names("Kai violin teacher", texts)
    assert not answers(2)  # only "Kai": another fact about Kai
    assert answers(1) and answers(3)
    # A word written in lower case somewhere is no name.
    assert answers_beyond_names("kai violin", {2: "kai takes the bus"})(2)


def test_a_question_that_names_what_only_the_older_names_asks_of_the_older() -> None:
    texts = {
        1: "Sven's rabbit is called Flinond and sleeps in the hallway.",
        2: "Ben Florir is a product manager on the search team.",
        3: "Please book a table for four at Nopa on Friday evening.",
        4: "No, make it Saturday instead.",
    }
    named = names_only_older("Who owns the pet called Flinond?", texts)
    assert named(2, 1)  # the pet is named by the older only
    # Nothing named: an elliptic reply may still be the older one's new value.
    assert not names_only_older("Which day is the dinner reservation for?", texts)(4, 3)
    # Named by both: the question does not tell them apart by it.
    both = {5: "Kai's violin teacher is Mira.", 6: "Kai's teacher is Tom now."}
    assert not names_only_older("Who teaches Kai?", both)(6, 5)
