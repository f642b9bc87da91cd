"""A named scope answers exactly as the same label set scanned afresh, whatever happened to the
set, the index and the other scopes in between; the same when the set keeps a journal of its
changes (``JournaledSet``, as a container's live rows do) and the scope catches up by it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemolog.projections import journaled
from mnemolog.projections.journaled import JournaledSet
from mnemolog.projections.vectors.index import VectorIndex

from .test_vectors import unit_rows

DIM = 16
POOL = 400

# One step: grow a scope's set, shrink it, overwrite a stored vector (scrub), remove a label,
# add new labels to the index, name in a set labels the index does not hold yet, or search a
# scope (with the set as it then is).
steps = st.lists(
    st.one_of(
        st.tuples(st.just("grow"), st.integers(0, 2), st.lists(st.integers(0, POOL - 1))),
        st.tuples(st.just("ahead"), st.integers(0, 2), st.integers(1, 5)),
        st.tuples(st.just("shrink"), st.integers(0, 2), st.integers(1, 40)),
        st.tuples(st.just("scrub"), st.integers(0, POOL - 1)),
        st.tuples(st.just("readd"), st.integers(0, POOL - 1)),
        st.tuples(st.just("remove"), st.integers(0, POOL - 1)),
        st.tuples(st.just("add"), st.integers(1, 30)),
        st.tuples(st.just("search"), st.integers(0, 2), st.integers(1, 12)),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(steps=steps, kind_of_set=st.sampled_from([set, JournaledSet]))
def test_scoped_searches_equal_fresh_scans(
    steps: list[tuple[Any, ...]], kind_of_set: type[set[int]]
) -> None:
    index = VectorIndex(Path("/nonexistent/v.bin"), DIM)
    index.add(list(range(POOL)), unit_rows(POOL, DIM, seed=1))
    top = POOL
    sets: list[set[int]] = [
        kind_of_set(range(0, POOL, 3)),
        kind_of_set(range(1, 200)),
        kind_of_set(),
    ]
    queries = unit_rows(8, DIM, seed=2)
    for n, step in enumerate(steps):
        kind = step[0]
        if kind == "grow":
            for label in step[2]:
                sets[step[1]].add(label)
        elif kind == "ahead":  # written to the set before the index has its vector
            for label in range(top, top + step[2]):
                sets[step[1]].add(label)
        elif kind == "shrink":
            for label in sorted(sets[step[1]])[: step[2]]:
                sets[step[1]].discard(label)
        elif kind == "scrub":
            index.scrub([step[1]], seed=n)
        elif kind == "readd":  # the same label, a new vector (an add replaces)
            index.add([step[1]], unit_rows(1, DIM, seed=500 + n))
        elif kind == "remove":
            index.remove([step[1]])
        elif kind == "add":
            index.add(list(range(top, top + step[1])), unit_rows(step[1], DIM, seed=100 + n))
            for label in range(top, top + step[1]):
                sets[n % 3].add(label)
            top += step[1]
        else:
            which, k = step[1], step[2]
            for query in queries[:3]:
                fresh = index.search(query, k, allowed=set(sets[which]))
                assert index.search(query, k, allowed=sets[which], scope=which) == fresh
            many = index.search_many(queries, k, allowed=sets[which], scope=("many", which))
            plain = index.search_many(queries, k, allowed=set(sets[which]))
            assert [[label for label, _ in hits] for hits in many] == [
                [label for label, _ in hits] for hits in plain
            ]
            # A floor keeps the same hits, those under it left out; rows left with none
            # (most of them, at a high floor) skip the ranking altogether.
            for floor in (0.0, 0.5, 0.9):
                floored = index.search_many(
                    queries, k, allowed=sets[which], scope=("many", which), at_least=floor
                )
                assert floored == [[hit for hit in hits if hit[1] >= floor] for hits in many]


def test_a_scope_keeps_its_rows_between_searches_and_follows_its_set() -> None:
    data = unit_rows(1000, DIM, seed=3)
    index = VectorIndex(Path("/nonexistent/v.bin"), DIM)
    index.add(list(range(1000)), data)
    live = set(range(0, 1000, 2))
    query = data[10]
    assert index.search(query, 1, allowed=live, scope="c")[0][0] == 10
    live.discard(10)  # superseded: the next search must not serve it
    live.add(11)
    assert index.search(query, 3, allowed=live, scope="c") == index.search(query, 3, allowed=live)
    assert all(label != 10 for label, _ in index.search(query, 50, allowed=live, scope="c"))
    index.scrub([12])  # erased: no copy of its vector may answer
    hits = dict(index.search(data[12], 500, allowed=live | {12}, scope="c"))
    assert 12 not in hits
    index.add([14], -data[14:15])  # replaced by its opposite: the copy must follow
    assert dict(index.search(data[14], 500, allowed=live, scope="c"))[14] < -0.99


def test_a_journal_names_what_changed_and_says_when_it_no_longer_reaches_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(journaled, "JOURNAL", 4)
    labels = JournaledSet([1, 2])
    start = labels.version
    labels.add(2)  # already held: no change
    labels.add(3)
    labels.discard(1)
    labels.discard(9)  # not held: no change
    assert labels == {2, 3}
    assert labels.changed_since(start) == [3, 1]
    assert labels.changed_since(labels.version) == []
    with pytest.raises(TypeError):
        labels.update([4])
    with pytest.raises(TypeError):
        labels |= {4}
    assert labels == {2, 3}
    for label in range(10, 20):
        labels.add(label)
    assert labels.changed_since(start) is None  # trimmed past it: compare whole sets
    assert labels.changed_since(labels.version - 2) == [18, 19]
    copied = copy.copy(labels)  # a journal of its own
    copied.add(99)
    assert labels.changed_since(labels.version) == [] and 99 not in labels


def test_a_scope_following_a_journal_sees_labels_removed_from_the_index() -> None:
    data = unit_rows(300, DIM, seed=4)
    index = VectorIndex(Path("/nonexistent/v.bin"), DIM)
    index.add(list(range(300)), data)
    live = JournaledSet(range(300))
    assert index.search(data[7], 1, allowed=live, scope="c")[0][0] == 7
    index.remove([7])  # the set still names it: the index's own deletion must hide it
    assert all(label != 7 for label, _ in index.search(data[7], 300, allowed=live, scope="c"))
    live.discard(8)
    live.add(8)  # gone and back between two searches: served again
    assert index.search(data[8], 1, allowed=live, scope="c")[0][0] == 8
