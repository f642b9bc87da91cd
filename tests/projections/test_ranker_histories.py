"""The learned stage's record sums, computed with arrays, against the same sums taken one
remembered showing at a time, as the features' docstring defines them."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from unittest.mock import patch

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemolog.projections.ranker import histories as histories_module
from mnemolog.projections.ranker.features import ALIKE, HEAD, KEPT, WINDOW
from mnemolog.projections.ranker.histories import SUMS, Histories

VERSIONS = [f"ver_{i}" for i in range(30)]
AGENTS = ["alice", "bob", "carol"]

showing = st.tuples(
    st.integers(0, 59),  # the recall
    st.sampled_from(AGENTS),
    st.lists(st.sampled_from(VERSIONS), min_size=1, max_size=HEAD, unique=True),  # its head
    st.lists(st.booleans(), min_size=10, max_size=10),  # which of the first shown were used
    st.none() | st.integers(0, 3),  # a grade of the first shown
)


def everyone(agents: Sequence[str]) -> list[bool]:
    return [True] * len(agents)


def among(counted: set[str]) -> Callable[[Sequence[str]], list[bool]]:
    return lambda agents: [a in counted for a in agents]


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    shared = len(a & b)
    overlap = shared / len(a | b) if shared else 0.0
    return overlap if overlap >= ALIKE else 0.0


def _reference(
    feedback: list[tuple[int, str, list[str], list[bool], int | None]],
    asked: list[str],
    head: frozenset[str],
    counted: set[str],
    eta: float,
    window: int = WINDOW,
    kept_per_agent: int = KEPT,
) -> np.ndarray:
    """Each version's record kept as a list per agent, in the order said, then summed; a
    recall past the latest ``window`` with feedback is forgotten with what was said in it."""
    heads: dict[int, frozenset[str]] = {}
    kept: dict[tuple[str, str], dict[int, dict[str, object]]] = {}
    live: dict[int, None] = {}  # the recalls remembered, by first feedback since admitted
    for recall, agent, shown, used, grade in feedback:
        pool = heads.setdefault(recall, frozenset(shown))
        if recall not in live:
            if len(live) == window:
                oldest = next(iter(live))
                del live[oldest]
                for record in kept.values():
                    record.pop(oldest, None)
            live[recall] = None
        for position, version in enumerate(sorted(pool)[:10], start=1):
            record = kept.setdefault((version, agent), {})
            if recall not in record:
                record[recall] = {"position": position, "used": False, "grade": None}
                if len(record) > kept_per_agent:
                    del record[next(iter(record))]
            entry = record[recall]
            entry["used"] = bool(entry["used"]) or used[position - 1]
            if grade is not None and position == 1:
                entry["grade"] = grade
    out = np.zeros((len(asked), len(SUMS)))
    for i, version in enumerate(asked):
        for (v, agent), record in kept.items():
            if v != version or agent not in counted:
                continue
            for recall, entry in record.items():
                alike = _jaccard(head, heads[recall])
                position = int(str(entry["position"]))
                out[i, 0] += alike
                out[i, 1] += alike * position**-eta
                if entry["used"]:
                    out[i, 2] += alike
                    out[i, 3] = max(out[i, 3], alike)
                if entry["grade"] is not None:
                    out[i, 4] += alike
                    out[i, 5] += alike * int(str(entry["grade"]))
    return out


def noted(
    feedback: list[tuple[int, str, list[str], list[bool], int | None]],
    histories: Histories | None = None,
    heads: dict[int, frozenset[str]] | None = None,
) -> Histories:
    """The feedback noted in turn, as the projection notes it: each recall's first ten shown,
    the uses said of them, a grade of the first. ``heads``: each recall's head, where known
    (a recall's head is the one it was first given feedback with)."""
    histories = Histories() if histories is None else histories
    heads = {} if heads is None else heads
    for recall, agent, shown, used, grade in feedback:
        pool = heads.setdefault(recall, frozenset(shown))
        for position, version in enumerate(sorted(pool)[:10], start=1):
            histories.note(
                version,
                agent,
                f"trc_{recall}",
                pool,
                position,
                used=used[position - 1],
                grade=grade if position == 1 else None,
            )
    return histories


@settings(max_examples=60, deadline=None)
@given(
    feedback=st.lists(showing, max_size=40),
    head=st.lists(st.sampled_from(VERSIONS), min_size=1, max_size=HEAD, unique=True),
    counted=st.sets(st.sampled_from(AGENTS)),
    eta=st.sampled_from([0.0, 1.0, 1.3]),
)
def test_the_sums_are_those_of_each_showing_taken_in_turn(
    feedback: list[tuple[int, str, list[str], list[bool], int | None]],
    head: list[str],
    counted: set[str],
    eta: float,
) -> None:
    histories = noted(feedback)
    asked = VERSIONS[:25]
    got = histories.sums(asked, frozenset(head), among(counted), lambda k: k**-eta)
    want = _reference(feedback, asked, frozenset(head), counted, eta)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    feedback=st.lists(showing, max_size=40),
    head=st.lists(st.sampled_from(VERSIONS), min_size=1, max_size=HEAD, unique=True),
    window=st.integers(1, 8),
)
def test_only_the_latest_window_of_recalls_with_feedback_counts(
    feedback: list[tuple[int, str, list[str], list[bool], int | None]],
    head: list[str],
    window: int,
) -> None:
    """A recall given feedback after ``WINDOW`` others takes the oldest one's row: what was
    said in that one counts no more, and a recall forgotten then given feedback again counts
    from then on."""
    with patch.object(histories_module, "WINDOW", window):
        histories = noted(feedback)
        asked = VERSIONS[:25]
        got = histories.sums(asked, frozenset(head), everyone, lambda k: k**-1.0)
    want = _reference(feedback, asked, frozenset(head), set(AGENTS), 1.0, window)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)


# Showings of nearly one question: every head is alike to ``VERSIONS[:14]``.
alike_showing = st.tuples(
    st.integers(0, 11),
    st.sampled_from(AGENTS),
    st.lists(st.sampled_from(VERSIONS[:14]), min_size=8, max_size=14, unique=True),
    st.lists(st.booleans(), min_size=10, max_size=10),
    st.none() | st.integers(0, 3),
)


@settings(max_examples=30, deadline=None)
@given(feedback=st.lists(alike_showing, min_size=1, max_size=30))
def test_sums_read_between_notes_follow_every_note_eviction_and_forgotten_recall(
    feedback: list[tuple[int, str, list[str], list[bool], int | None]],
) -> None:
    """What a recall reads is kept for the next one: every note, every entry an agent's
    ``KEPT`` pushes out and every recall the window forgets must reach the next read."""
    head = frozenset(VERSIONS[:14])
    with patch.object(histories_module, "KEPT", 2), patch.object(histories_module, "WINDOW", 5):
        histories = Histories()
        heads: dict[int, frozenset[str]] = {}
        for n in range(1, len(feedback) + 1):
            noted(feedback[n - 1 : n], histories, heads)
            got = histories.sums(VERSIONS[:25], head, everyone, lambda k: k**-1.0)
            want = _reference(feedback[:n], VERSIONS[:25], head, set(AGENTS), 1.0, 5, 2)
            assert np.allclose(got, want, rtol=1e-12, atol=1e-12), n


def test_a_forgotten_recall_no_longer_counts() -> None:
    histories = Histories()
    pool = frozenset(VERSIONS[:20])
    with patch.object(histories_module, "WINDOW", 2):
        histories.note("ver_0", "alice", "trc_a", pool, 1, used=True, grade=3)
        histories.note("ver_0", "alice", "trc_b", pool, 2)
        (row,) = histories.sums(["ver_0"], pool, everyone, lambda k: 1.0)
        assert (row[0], row[2], row[4]) == (2.0, 1.0, 1.0)
        histories.note("ver_1", "alice", "trc_c", pool, 1)  # takes trc_a's row
        (row,) = histories.sums(["ver_0"], pool, everyone, lambda k: 1.0)
    assert (row[0], row[2], row[4]) == (1.0, 0.0, 0.0)


def test_a_recall_unlike_this_one_counts_for_nothing() -> None:
    histories = Histories()
    alike = frozenset(VERSIONS[:20])
    unlike = frozenset(VERSIONS[10:30])  # 10 of 30 shared: a third, under ALIKE
    histories.note("ver_0", "alice", "trc_a", alike, 1, used=True)
    histories.note("ver_10", "alice", "trc_b", unlike, 1, used=True, grade=3)
    sums = histories.sums(["ver_0", "ver_10", "ver_29"], alike, everyone, lambda k: 1.0)
    seen, _, used, closest, graded, _ = sums.T
    assert list(seen) == [1.0, 0.0, 0.0]
    assert list(used) == [1.0, 0.0, 0.0]
    assert list(closest) == [1.0, 0.0, 0.0]
    assert list(graded) == [0.0, 0.0, 0.0]


def test_only_the_latest_kept_recalls_of_an_agent_count() -> None:
    histories = Histories()
    pool = frozenset(VERSIONS[:20])
    for n in range(KEPT + 8):
        histories.note("ver_0", "alice", f"trc_{n}", pool, 1, used=n < 8)
    (row,) = histories.sums(["ver_0"], pool, everyone, lambda k: 1.0)
    assert row[0] == KEPT  # the 8 oldest showings, the used ones, were dropped
    assert row[2] == 0.0
    assert math.isclose(row[1], KEPT)


def test_evictions_of_several_agents_interleaved_keep_the_sums_exact() -> None:
    """Every agent shown the same few versions in far more than ``KEPT`` recalls, in turns:
    each use, grade and eviction lands on the right entry of the shared record."""
    rng = np.random.default_rng(7)
    feedback = []
    for recall in range(3 * KEPT + 30):
        shown = [str(v) for v in rng.choice(VERSIONS[:14], size=12, replace=False)]
        used = [bool(u) for u in rng.random(10) < 0.3]
        grade = None if rng.random() < 0.5 else int(rng.integers(0, 4))
        for agent in AGENTS if recall % 3 else AGENTS[::-1]:
            feedback.append((recall, agent, shown, used, grade))
    histories = noted(feedback)
    head = frozenset(VERSIONS[:14])
    for counted in ({"alice"}, set(AGENTS)):
        got = histories.sums(VERSIONS[:16], head, among(counted), lambda k: k**-1.1)
        want = _reference(feedback, VERSIONS[:16], head, counted, 1.1)
        assert got[:, 0].max() > 0
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12)
