"""The rows kept per version for the learned stage's likeness: every add and remove, through
segments that move and an array that is packed again, against a plain multiset per version."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemolog.projections.ranker.postings import Postings

step = st.tuples(st.booleans(), st.integers(1, 4), st.integers(0, 6))  # add?, slot, row


@settings(max_examples=300, deadline=None)
@given(st.lists(step, max_size=400), st.integers(1, 16))
def test_every_version_holds_exactly_the_rows_added_and_not_removed(
    steps: list[tuple[bool, int, int]], room: int
) -> None:
    postings = Postings(room=room)
    for slot in range(5):
        postings.reserve(slot)
    expected: dict[int, Counter[int]] = {slot: Counter() for slot in range(5)}
    for add, slot, row in steps:
        if add:
            postings.add(slot, row)
            expected[slot][row] += 1
        elif expected[slot][row]:
            postings.remove(slot, row)
            expected[slot][row] -= 1
        for s, rows in expected.items():
            assert Counter(postings.of(s).tolist()) == +rows, s


def test_a_slot_reserved_past_the_end_grows_every_table() -> None:
    postings = Postings()
    postings.reserve(500)
    postings.add(500, 7)
    postings.add(3, 7)
    assert postings.of(500).tolist() == [7]
    assert postings.of(3).tolist() == [7]
    assert postings.of(499).tolist() == []
