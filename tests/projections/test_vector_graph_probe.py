"""An approximate search (a write's neighbours) through the graph: the same similarities and
order as the exact scan of the same set, labels not in the graph yet found beside it, and the
exact path kept where the set is small or a small share of the index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mnemolog.projections.vectors.exact import GRAPH_PROBE_MIN
from mnemolog.projections.vectors.index import VectorIndex

from .test_vectors import unit_rows

DIM = 8  # low: the graph then finds the true nearest, so both paths must agree exactly
COUNT = GRAPH_PROBE_MIN + 500


class CountedGraph:
    """The index's hnswlib graph, counting its searches."""

    def __init__(self, graph: Any) -> None:
        self._graph = graph
        self.searches = 0

    def knn_query(self, *args: Any, **kwargs: Any) -> Any:
        self.searches += 1
        return self._graph.knn_query(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._graph, name)


def filled(count: int = COUNT) -> tuple[VectorIndex, CountedGraph]:
    index = VectorIndex(Path("/nonexistent/v.bin"), DIM)
    index.add(list(range(count)), unit_rows(count, DIM, seed=3))
    index.save(1)  # drained: every label is in the graph
    graph = CountedGraph(index._hnsw)
    index._hnsw = graph  # type: ignore[assignment]
    return index, graph


def test_a_set_that_is_most_of_the_index_is_searched_through_the_graph_as_the_scan_answers() -> (
    None
):
    index, graph = filled()
    index.remove([7, 8, 9])
    everything = set(range(COUNT)) - {7, 8, 9}
    queries = unit_rows(20, DIM, seed=4)
    approximate = index.search_many(queries, 16, allowed=everything, at_least=0.2, approximate=True)
    assert graph.searches == 1  # every query in one call of the graph
    exact = index.search_many(queries, 16, allowed=everything, at_least=0.2)
    assert graph.searches == 1  # the exact path never asks the graph
    assert [[label for label, _ in hits] for hits in approximate] == [
        [label for label, _ in hits] for hits in exact
    ]
    for graph_hits, exact_hits in zip(approximate, exact, strict=True):
        for (_, a), (_, b) in zip(graph_hits, exact_hits, strict=True):
            assert abs(a - b) < 1e-6
    assert all(hits and hits[-1][1] >= 0.2 for hits in approximate)
    assert not {label for hits in approximate for label, _ in hits} & {7, 8, 9}


def test_the_graph_probe_finds_what_the_graph_has_not_taken_in_yet() -> None:
    index, graph = filled()
    newcomer = unit_rows(1, DIM, seed=5)
    index.add([COUNT], newcomer)  # queued for the graph worker; the matrix holds it at once
    hits = index.search_many(newcomer, 3, allowed=set(range(COUNT + 1)), approximate=True)
    assert graph.searches == 1
    assert hits[0][0][0] == COUNT
    assert abs(hits[0][0][1] - 1.0) < 1e-6


def test_a_small_set_or_a_small_share_of_the_index_keeps_the_exact_scan() -> None:
    index, graph = filled(3 * COUNT)
    queries = unit_rows(5, DIM, seed=6)
    for allowed in (set(range(0, 3 * COUNT, 4)), set(range(GRAPH_PROBE_MIN - 1))):
        approximate = index.search_many(queries, 10, allowed=allowed, approximate=True)
        assert approximate == index.search_many(queries, 10, allowed=allowed)  # the same path
        assert all(label in allowed for hits in approximate for label, _ in hits)
    assert graph.searches == 0


def test_a_set_naming_labels_the_index_does_not_hold_yet_falls_back_to_the_scan() -> None:
    index = VectorIndex(Path("/nonexistent/v.bin"), DIM)
    index.add([0], unit_rows(1, DIM, seed=7))
    index.remove([0])  # nothing live: a set of unknown labels finds nothing, and raises nothing
    assert index.search_many(
        unit_rows(2, DIM, seed=8), 5, allowed=set(range(COUNT)), approximate=True
    ) == [[], []]
