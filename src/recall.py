"""Hybrid recall: vector and BM25 candidates, fused by reciprocal rank, weighted for recency,
floored, diversified, and recorded as a ``recall.performed`` event whose id is the trace id.

Every candidate is kept in the event, also those under the floor and those not served, with
its similarity, both ranks and its scores, so a trace shows why each memory was or was not
recalled.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Literal

import msgspec
import numpy as np
import numpy.typing as npt

from .embedding.port import Embedder, from_bytes
from .eventlog import Actor, Draft, EventLog, Sealer
from .eventlog.events import Candidate, RecallPerformed
from .projections.indexes import FullTextProjection, VectorProjection
from .projections.memories import MemoryProjection, VersionRow
from .projections.runner import ProjectionRunner
from .subjects import container_subject

Origin = Literal["rest", "proxy", "mcp", "capture", "import"]

RRF_K = 60
FLOOR = 0.25  # cosine under which a candidate without a keyword match is not served
RECENCY_HALF_LIFE_DAYS = 30.0
RECENCY_WEIGHT = 0.25  # share of the score that decays with age
MMR_LAMBDA = 0.7
_NS_PER_DAY = 86_400 * 1_000_000_000


class RecallRequest(msgspec.Struct, frozen=True, kw_only=True):
    q: str
    container_tag: str | None = None
    limit: int = 10
    recency: bool = True
    diversify: bool | None = None
    as_of: int | None = None  # UTC ns
    include_forgotten: bool = False


class Hit(msgspec.Struct, frozen=True, kw_only=True):
    row: VersionRow
    similarity: float
    score: float


class RecallResult(msgspec.Struct, frozen=True, kw_only=True):
    trace_id: str
    hits: list[Hit]
    seq: int


class Recall:
    def __init__(
        self,
        *,
        log: EventLog,
        sealer: Sealer,
        embedder: Embedder,
        memories: MemoryProjection,
        vectors: VectorProjection,
        fulltext: FullTextProjection,
        runner: ProjectionRunner,
    ) -> None:
        self._log = log
        self._sealer = sealer
        self._embedder = embedder
        self._memories = memories
        self._vectors = vectors
        self._fulltext = fulltext
        self._runner = runner

    def search(self, request: RecallRequest, *, origin: Origin, actor: Actor) -> RecallResult:
        latency: dict[str, float] = {}
        clock = time.perf_counter()

        def lap(stage: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            latency[stage] = round((now - clock) * 1000, 3)
            clock = now

        allowed = self._allowed(request)
        query = self._embedder.embed([request.q])[0]
        lap("embed")
        pool = max(50, request.limit * 5)
        by_vector = (
            self._vectors.index.search(query, pool, allowed=allowed.__contains__) if allowed else []
        )
        lap("vector")
        by_text = [
            (row_id, score)
            for row_id, score in self._fulltext.index.search(
                request.q, pool, container=request.container_tag
            )
            if row_id in allowed
        ]
        lap("bm25")
        candidates, served = self._rank(request, query, by_vector, by_text)
        lap("fuse")
        recall_id = f"trc_{uuid.uuid4().hex}"
        event = RecallPerformed(
            recall_id=recall_id,
            origin=origin,
            container_tag=request.container_tag,
            query=self._sealer.seal_text(container_subject(request.container_tag or ""), request.q),
            embedder=self._embedder.identity.describe(),
            candidates=candidates,
            served=[hit.row.version_id for hit in served],
            latency_ms=latency,
            params={
                "limit": request.limit,
                "recency": request.recency,
                "diversify": request.diversify,
                "asOf": request.as_of,
                "includeForgotten": request.include_forgotten,
            },
        )
        seq = self._log.append([Draft(actor, event)]).seqs[0]
        self._runner.sync_to(seq)  # so /inspect shows this trace as soon as it is answered
        return RecallResult(trace_id=recall_id, hits=served, seq=seq)

    def _allowed(self, request: RecallRequest) -> frozenset[int]:
        """The versions a search may return: latest (or valid at ``as_of``), live, in scope."""
        if request.as_of is None and not request.include_forgotten and request.container_tag:
            return self._memories.live_rows(request.container_tag)
        return self._memories.visible_rows(
            container_tag=request.container_tag,
            as_of=request.as_of,
            include_forgotten=request.include_forgotten,
        )

    def _rank(
        self,
        request: RecallRequest,
        query: npt.NDArray[np.float32],
        by_vector: Sequence[tuple[int, float]],
        by_text: Sequence[tuple[int, float]],
    ) -> tuple[list[Candidate], list[Hit]]:
        vector_rank = {row_id: i + 1 for i, (row_id, _) in enumerate(by_vector)}
        similarity = dict(by_vector)
        text_rank = {row_id: i + 1 for i, (row_id, _) in enumerate(by_text)}
        bm25 = dict(by_text)
        rows = self._memories.by_row_ids(list({*vector_rank, *text_rank}))
        reference = request.as_of or time.time_ns()
        scored: list[tuple[float, float, int]] = []
        for row_id in rows:
            fused = sum(
                1.0 / (RRF_K + rank[row_id]) for rank in (vector_rank, text_rank) if row_id in rank
            )
            score = fused
            if request.recency:
                age_days = max(0.0, (reference - rows[row_id].observed_at) / _NS_PER_DAY)
                decay = 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS)
                score = fused * ((1.0 - RECENCY_WEIGHT) + RECENCY_WEIGHT * decay)
            scored.append((score, fused, row_id))
        scored.sort(key=lambda s: (-s[0], s[2]))
        floor_ok = [
            row_id
            for _, _, row_id in scored
            if row_id in text_rank or similarity.get(row_id, 0.0) >= FLOOR
        ]
        diversify = request.diversify if request.diversify is not None else request.limit >= 5
        order = self._mmr(query, floor_ok, {r: s for s, _, r in scored}) if diversify else floor_ok
        chosen = order[: request.limit]
        served_set = set(chosen)
        score_of = {row_id: (score, fused) for score, fused, row_id in scored}
        candidates = [
            Candidate(
                version_id=rows[row_id].version_id,
                similarity=similarity.get(row_id),
                bm25=bm25.get(row_id),
                fused=score_of[row_id][1],
                score=score_of[row_id][0],
                served=row_id in served_set,
                vector_rank=vector_rank.get(row_id),
                bm25_rank=text_rank.get(row_id),
                below_floor=row_id not in text_rank and similarity.get(row_id, 0.0) < FLOOR,
            )
            for _, _, row_id in scored
        ]
        hits = [
            Hit(row=rows[row_id], similarity=similarity.get(row_id, 0.0), score=score_of[row_id][0])
            for row_id in chosen
        ]
        return candidates, hits

    def _mmr(
        self, query: npt.NDArray[np.float32], ranked: list[int], score: dict[int, float]
    ) -> list[int]:
        """Maximal marginal relevance: reorder so near-duplicates do not crowd the top.

        It only reorders: relevance is the fused score (scaled to the best one), redundancy
        the highest cosine to a memory already placed.
        """
        if len(ranked) < 3:
            return ranked
        vectors = {row_id: from_bytes(data) for row_id, data in self._memories.vectors_of(ranked)}
        top = max(score[r] for r in ranked) or 1.0
        redundancy = dict.fromkeys(ranked, 0.0)
        chosen: list[int] = []
        rest = list(ranked)
        while rest:
            best = max(
                rest,
                key=lambda r: MMR_LAMBDA * score[r] / top - (1.0 - MMR_LAMBDA) * redundancy[r],
            )
            chosen.append(best)
            rest.remove(best)
            placed = vectors.get(best)
            if placed is None:
                continue
            for r in rest:
                vector = vectors.get(r)
                if vector is not None:
                    redundancy[r] = max(redundancy[r], float(np.dot(placed, vector)))
        return chosen
