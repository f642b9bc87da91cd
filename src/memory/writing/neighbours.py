"""The live memories of a container a write is judged against: the vector index's closest
and the memories that share the write's words. A port of ``writes.py`` (``NearestLive``)."""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet

import numpy as np
import numpy.typing as npt

from ...projections.indexes import FullTextProjection, VectorProjection
from ...projections.memories.projection import MemoryProjection
from ..recall.stages import live_scope

# Memories sharing a write's words that are judged beside its closest vectors.
KEYWORD_NEIGHBOURS = 8
# The rarest words of a write searched alone: a thing is named by a word or two ("Priya
# Shograi", "the Zed hosting plan"), and its name is what a store holds least often.
RARE_TERMS = 2


class LiveNeighbours:
    """Nearest live chain heads of a container: the vector index's closest, and the memories
    that share the write's rarest words (its BM25 best), which the vectors may rank below many
    facts of one template (a correction names its thing as the older text did)."""

    def __init__(
        self, memories: MemoryProjection, vectors: VectorProjection, fulltext: FullTextProjection
    ) -> None:
        self._memories = memories
        self._vectors = vectors
        self._fulltext = fulltext

    def nearest_many(
        self,
        container_tag: str,
        vectors: npt.NDArray[np.float32],
        texts: Sequence[str],
        k: int,
        at_least: float,
    ) -> list[list[tuple[int, float]]]:
        live = self._memories.live_rows(container_tag)
        if not live:
            return [[] for _ in range(len(vectors))]
        # Through the graph when the container is most of the index, at the cost of its log: a
        # neighbour the graph misses (2 in 1,000 of the true 16 nearest, measured) is judged as
        # if absent: the write is kept beside it. Decisions are recorded as events, so no
        # replay searches again.
        found = self._vectors.index.search_many(
            vectors,
            k,
            allowed=live,
            scope=live_scope(container_tag),
            at_least=at_least,
            approximate=True,
        )
        return [
            self._with_keywords(container_tag, live, text, vector, near)
            for text, vector, near in zip(texts, vectors, found, strict=True)
        ]

    def _with_keywords(
        self,
        container_tag: str,
        live: AbstractSet[int],
        text: str,
        vector: npt.NDArray[np.float32],
        near: list[tuple[int, float]],
    ) -> list[tuple[int, float]]:
        known = {label for label, _ in near}
        index = self._fulltext.index
        extra: list[int] = []
        # The write's words, and its rarest words alone: in a store of many facts of one
        # template, the common words of a correction ("moved", a city) rank hundreds of other
        # facts above the one that names its thing.
        for hits in (
            index.search(text, 2 * KEYWORD_NEIGHBOURS, container=container_tag),
            index.search_rare(
                text, 2 * KEYWORD_NEIGHBOURS, count=RARE_TERMS, container=container_tag
            ),
        ):
            found = [label for label, _ in hits if label in live and label not in known]
            extra += found[:KEYWORD_NEIGHBOURS]
            known.update(found[:KEYWORD_NEIGHBOURS])
        matrix = self._vectors.index.unit_vectors(extra) if extra else None
        if matrix is None:  # none, or the index is still copying a loaded graph in
            return near
        cosines = matrix @ vector
        near = near + [(label, float(c)) for label, c in zip(extra, cosines, strict=True)]
        return sorted(near, key=lambda hit: -hit[1])
