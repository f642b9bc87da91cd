"""A named scope answers exactly as the same label set scanned afresh, whatever happened to the
set, the index and the other scopes in between."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemolog.projections.vectors.index import VectorIndex

from .test_vectors import unit_rows

DIM = 16
POOL = 400

# One step: grow a scope's set, shrink it, overwrite a stored vector (scrub), remove a label,
# add new labels to the index, or search a scope (with the set as it then is).
steps = st.lists(
    st.one_of(
        st.tuples(st.just("grow"), st.integers(0, 2), st.lists(st.integers(0, POOL - 1))),
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
@given(steps=steps)
def test_scoped_searches_equal_fresh_scans(steps: list[tuple[Any, ...]]) -> None:
    index = VectorIndex(Path("/nonexistent/v.bin"), DIM)
    index.add(list(range(POOL)), unit_rows(POOL, DIM, seed=1))
    top = POOL
    sets: list[set[int]] = [set(range(0, POOL, 3)), set(range(1, 200)), set()]
    queries = unit_rows(8, DIM, seed=2)
    for n, step in enumerate(steps):
        kind = step[0]
        if kind == "grow":
            sets[step[1]].update(step[2])
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
            sets[n % 3].update(range(top, top + step[1]))
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
