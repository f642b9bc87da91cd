"""Recall over document chunks: fused vector and BM25 ranks among the live chunks a quarantine
does not hide, optionally reranked. Documents do not version, so ``asOf`` and recency do not
apply to them."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Set as AbstractSet

import numpy as np
import numpy.typing as npt

from ...projections.documents.projection import DocumentProjection
from ...projections.indexes import FullTextProjection, VectorProjection
from .messages import Hit, RecallRequest, chunk_trace_id
from .ranking import fuse
from .stages import Judge, Ranked, index_candidates, live_scope, unhidden


class DocumentRecall:
    def __init__(
        self,
        *,
        documents: DocumentProjection,
        vectors: VectorProjection,
        fulltext: FullTextProjection,
        hidden: Callable[[str | None], AbstractSet[int]] | None,
        floor: float,
    ) -> None:
        self._documents = documents
        self._vectors = vectors
        self._fulltext = fulltext
        self._hidden = hidden  # the chunks of quarantined agents' documents
        self._floor = floor

    def ranked(
        self,
        request: RecallRequest,
        query: npt.NDArray[np.float32],
        lap: Callable[[str], None],
        judge: Judge | None,
    ) -> Ranked:
        """Every chunk candidate for the trace, and the served hits in order."""
        allowed, scope = unhidden(
            self._documents.live_labels(request.container_tag),
            live_scope(request.container_tag),
            self._hidden,
            request.container_tag,
        )
        by_vector, by_text = index_candidates(
            self._vectors,
            (self._fulltext, None),
            request,
            query,
            allowed,
            lap,
            "doc",
            scope,
        )
        chunks = self._documents.chunks(list({r for r, _ in by_vector} | {r for r, _ in by_text}))
        fused = fuse(by_vector, by_text, list(chunks), lambda _: 1.0, self._floor)
        order = [f.label for f in fused if not f.below_floor]
        reranked = None
        if judge is not None:
            texts = {r: t for r in order[: judge.pool] if (t := chunks[r].text) is not None}
            reranked = judge.rerank(order, texts)
            order = reranked.order
        by_label = {f.label: f for f in fused}
        return Ranked(
            candidates=[f.candidate(chunk_trace_id(chunks[f.label]), reranked) for f in fused],
            hits=[
                Hit(
                    chunk=chunks[r],
                    similarity=by_label[r].similarity or 0.0,
                    score=by_label[r].score,
                    rerank_score=None if reranked is None else reranked.scores.get(r),
                )
                for r in order[: request.limit]
            ],
        )
