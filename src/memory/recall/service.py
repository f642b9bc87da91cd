"""Hybrid recall: vector and BM25 candidates, fused by reciprocal rank, weighted for recency,
floored, optionally reranked by a local cross-encoder, diversified, and recorded as a
``recall.performed`` event whose id is the trace id.

Memories and document chunks are ranked the same way, each family on its own indexes; a
``hybrid`` search fuses the two served lists by rank. Every candidate is kept in the event,
also those under the floor and those not served, with its similarity, both ranks and its
scores, so a trace shows why each one was or was not recalled.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Hashable, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import Future

import msgspec
import numpy as np
import numpy.typing as npt

from ...embedding.port import Embedder, from_bytes
from ...embedding.rerank import Reranker
from ...errors import RerankerUnavailable
from ...eventlog import Actor, Appended, Draft, Sealer
from ...eventlog.events import RecallPerformed
from ...eventlog.subjects import container_subject
from ...projections.documents.projection import DocumentProjection
from ...projections.indexes import FullTextProjection, VectorProjection
from ...projections.memories.projection import MemoryProjection
from ...projections.memories.rows import VersionRow
from ...projections.readmodels import ReadModels
from ...projections.trust.projection import TrustProjection
from ...projections.trust.rows import Carried
from ...projections.vectors.exact import unit
from ..record import Recorder
from ..timings import NO_TIMINGS, StageTimings
from ..writing.calibration import thresholds_for
from .alike import answers_alike
from .documents import DocumentRecall
from .learned import LearnedStage, Standing, logged
from .messages import Hit, Origin, RecallRequest, RecallResult
from .ranking import (
    AGREED_RANKS,
    RANKING,
    RERANK_POOL,
    agreed_at_top,
    fuse,
    interleave,
    linked_newer_first,
    mmr,
    newer_above_older_among_agreed,
    recency_weight,
)
from .stages import (
    Judge,
    Ranked,
    Stopwatch,
    asks_of_older,
    index_candidates,
    live_scope,
    marked,
    searched_seq,
    unhidden,
    vector_digest,
)


class Recall:
    def __init__(
        self,
        *,
        recorder: Recorder,
        sealer: Sealer,
        embedder: Embedder,
        memories: MemoryProjection,
        vectors: VectorProjection,
        fulltext: FullTextProjection,
        context_fulltext: FullTextProjection,
        documents: DocumentProjection,
        document_vectors: VectorProjection,
        document_fulltext: FullTextProjection,
        reranker: Reranker | None = None,
        rerank_pool: int = RERANK_POOL,
        trust: TrustProjection | None = None,
        hidden: Callable[[str | None], AbstractSet[int]] | None = None,
        hidden_chunks: Callable[[str | None], AbstractSet[int]] | None = None,
        learned: LearnedStage | None = None,
        timings: StageTimings = NO_TIMINGS,
    ) -> None:
        self._trust = trust
        self.learned = learned
        self._timings = timings  # hears each search's stage times (``/metrics``)
        # Given by the shell that owns the model (``runtime.py``, a replay): the domain neither
        # finds nor loads it.
        self.reranker = reranker
        self.rerank_pool = rerank_pool
        # The versions of quarantined agents, and their documents' chunks, left out of every
        # search (``quarantine.py``).
        self.hidden = hidden
        self._recorder = recorder
        self._sealer = sealer
        self._embedder = embedder
        # The cosine floor is the embedder's own: cosines differ in range from model to model.
        self._floor = thresholds_for(embedder.identity.name).floor
        self._memories = memories
        self._vectors = vectors
        self._fulltext = fulltext
        self._context_fulltext = context_fulltext
        self._document_fulltext = document_fulltext
        self._document_recall = DocumentRecall(
            documents=documents,
            vectors=document_vectors,
            fulltext=document_fulltext,
            hidden=hidden_chunks,
            floor=self._floor,
        )
        self._in_flight: set[Future[Appended]] = set()
        self._in_flight_lock = threading.Lock()

    @classmethod
    def over(
        cls,
        models: ReadModels,
        *,
        recorder: Recorder,
        sealer: Sealer,
        embedder: Embedder,
        hidden: Callable[[str | None], AbstractSet[int]],
        hidden_chunks: Callable[[str | None], AbstractSet[int]],
        reranker: Reranker | None = None,
        rerank_pool: int = RERANK_POOL,
        timings: StageTimings = NO_TIMINGS,
    ) -> Recall:
        """Recall over a set of read models: the server's (``core.py``) and a replay's
        (``world.py``) are built alike."""
        return cls(
            recorder=recorder,
            sealer=sealer,
            embedder=embedder,
            memories=models.memories,
            vectors=models.vectors,
            fulltext=models.fulltext,
            context_fulltext=models.context_fulltext,
            documents=models.documents,
            document_vectors=models.document_vectors,
            document_fulltext=models.document_fulltext,
            trust=models.trust,
            reranker=reranker,
            rerank_pool=rerank_pool,
            hidden=hidden,
            hidden_chunks=hidden_chunks,
            learned=LearnedStage(
                models.ranker, models.trust, Standing(models.trust, models.oversight.set_aside)
            ),
            timings=timings,
        )

    def search(
        self, request: RecallRequest, *, origin: Origin, actor: Actor, durable: bool = True
    ) -> RecallResult:
        """Rank, serve and record. With ``durable`` the recall event is on disk and applied to
        the projections before this returns; without, it is queued for the next group commit
        and the answer goes out at once (``seq`` is then ``None``; ``settle`` waits for it)."""
        reranker = self.reranker if request.rerank else None
        skipped: str | None = None
        if request.rerank and request.rerank_if_installed and not self.rerank_installed():
            reranker, skipped = None, RerankerUnavailable.code
        elif request.rerank and reranker is None:
            raise RerankerUnavailable("this server has no reranker configured")
        pool = request.rerank_pool if request.rerank_pool is not None else self.rerank_pool
        watch = Stopwatch()
        lap = watch.lap
        query = self._embedder.embed_queries([request.q])[0]
        lap("embed")
        judge = None if reranker is None else Judge(reranker, request.q, pool, watch)
        recall_id = f"trc_{uuid.uuid4().hex}"
        # A ranking reads several read models one after another, and a batch applied between
        # two of those reads would leave the trace matching no position of the log: it reads
        # them all in one hold, which no batch is applied during (others' searches share it).
        with self._recorder.runner.holding() as view:  # the seq a replay folds to
            for projection in (self._fulltext, self._context_fulltext, self._document_fulltext):
                projection.index.forget_searched_seq()
            families: list[Ranked] = []
            if request.mode in ("memories", "hybrid"):
                families.append(
                    self._memories_ranked(
                        request, query, lap, judge, recall_id, actor.agent_id, watch.apart
                    )
                )
            if request.mode in ("documents", "hybrid"):
                families.append(self._document_recall.ranked(request, query, lap, judge))
        hits = interleave([f.hits for f in families], lambda hit: hit.score)[: request.limit]
        lap("fuse")
        served = {hit.trace_id for hit in hits}
        candidates = [
            msgspec.structs.replace(c, served=c.version_id in served)
            for family in families
            for c in family.candidates
        ]
        ranked = families[0] if request.mode != "documents" else None
        event = RecallPerformed(
            recall_id=recall_id,
            origin=origin,
            container_tag=request.container_tag,
            query=self._sealer.seal_text(container_subject(request.container_tag or ""), request.q),
            embedder=self._embedder.identity.describe(),
            query_vector_digest=vector_digest(query),
            view_seq=view,
            # The full-text indexes' disk/tail boundaries decide BM25 scores: a replay
            # commits its indexes where these searches found them.
            index_seqs={
                "memories": searched_seq(self._fulltext.index),
                "contexts": searched_seq(self._context_fulltext.index),
                "documents": searched_seq(self._document_fulltext.index),
            },
            candidates=candidates,
            served=[hit.trace_id for hit in hits],
            latency_ms=watch.ms,
            params={
                "limit": request.limit,
                "searchMode": request.mode,
                "recency": request.recency,
                "diversify": request.diversify,
                "asOf": request.as_of,
                **({"factAsOf": request.fact_as_of} if request.fact_as_of is not None else {}),
                "includeForgotten": request.include_forgotten,
                **({"minTrust": request.min_trust} if request.min_trust is not None else {}),
                "ranking": RANKING,
                **(
                    {"rerank": True, "rerankPool": pool, "reranker": reranker.identity}
                    if reranker is not None
                    else {}
                ),
                **({"rerankSkipped": skipped} if skipped is not None else {}),
                **({"ranker": ranked.ranker} if ranked and ranked.ranker else {}),
                **({"explore": ranked.explore} if ranked and ranked.explore else {}),
            },
            learned=ranked.learned if ranked else None,
        )
        self._timings.observe("search", watch.ms)
        drafts = [Draft(actor, event)]
        if not durable:
            future = self._recorder.record(drafts, durable=False)
            with self._in_flight_lock:
                self._in_flight.add(future)
            future.add_done_callback(self._landed)
            return RecallResult(trace_id=recall_id, hits=hits, seq=None)
        # The trace is in the projections as soon as it is answered.
        seq = self._recorder.record(drafts).seqs[0]
        return RecallResult(trace_id=recall_id, hits=hits, seq=seq)

    def rerank_installed(self) -> bool:
        """Whether the reranker's files are installed and load (a failed load is tried again
        at the next call: fetching the model needs no restart)."""
        if self.reranker is None:
            return False
        try:
            self.reranker.load()
        except RerankerUnavailable:
            return False
        return True

    def settle(self) -> None:
        """Wait until every recall event answered ahead of its commit is durable, and apply
        the log to the projections: what ``/inspect`` reads then holds every trace answered."""
        with self._in_flight_lock:
            pending = list(self._in_flight)
        for future in pending:
            with contextlib.suppress(Exception):
                future.result()
        self._recorder.apply_all()

    def _landed(self, future: Future[Appended]) -> None:
        with self._in_flight_lock:
            self._in_flight.discard(future)

    # --- memories --------------------------------------------------------------------------

    def _memories_ranked(
        self,
        request: RecallRequest,
        query: npt.NDArray[np.float32],
        lap: Callable[[str], None],
        judge: Judge | None,
        recall_id: str,
        agent: str,
        apart: Callable[[str], contextlib.AbstractContextManager[None]],
    ) -> Ranked:
        allowed, scope = unhidden(*self._allowed(request), self.hidden, request.container_tag)
        by_vector, by_text = index_candidates(
            self._vectors,
            (self._fulltext, self._context_fulltext),
            request,
            query,
            allowed,
            lap,
            "memory",
            scope,
        )
        # Every candidate's version id and date (narrow, cheap to read); whole rows are read
        # only for the versions served.
        stamps = self._memories.stamps(list({r for r, _ in by_vector} | {r for r, _ in by_text}))
        observed = {row_id: observed_at for row_id, (_, observed_at) in stamps.items()}
        # Age is measured from the newest candidate (or asOf), not from today: an imported
        # history from years ago must still rank its newer statements first.
        newest = max(observed.values(), default=time.time_ns())
        reference = next((t for t in (request.fact_as_of, request.as_of) if t is not None), newest)

        def weight(row_id: int) -> float:
            return recency_weight(observed[row_id], reference) if request.recency else 1.0

        fused = fuse(by_vector, by_text, list(stamps), weight, self._floor)
        read: dict[int, VersionRow] = {}  # rows read so far, each read once

        def rows_of(labels: Sequence[int]) -> dict[int, VersionRow]:
            missing = [r for r in labels if r not in read]
            if missing:
                read.update(self._memories.by_row_ids(missing))
            return {r: read[r] for r in labels if r in read}

        diversify = request.diversify if request.diversify is not None else request.limit >= 5
        order = [f.label for f in fused if not f.below_floor]
        distrusted = self._under_trust(request.min_trust, order, stamps)
        order = [r for r in order if r not in distrusted] if distrusted else order
        relevance = {f.label: f.score for f in fused}
        # MMR is quadratic: reorder only the head the answer can draw from.
        head = max(3 * request.limit, 20)
        reranked = None
        if judge is not None:
            # The cross-encoder judges the head of the fused order by the memories' text; its
            # order replaces the fused one there, and MMR then weighs its relevance, within
            # that head only (the fused scores below are of another scale).
            rows = rows_of(order[: judge.pool])
            texts = {r: row.content for r, row in rows.items() if row.content is not None}
            reranked = judge.rerank(order, texts)
            order, relevance = reranked.order, reranked.relevance()
            head = len(relevance)
        # With recency on, these may still move up into the answer (the last step below).
        agreed = agreed_at_top(fused) if request.recency else set()
        if diversify:
            placed = self._mmr(order[:head], relevance, request.limit, agreed)
            order = placed + order[len(placed) :]
        if request.recency:
            # Of two statements of one day, the newer first when it answers the question alike.
            first = set(order[:AGREED_RANKS])
            close = answers_alike(
                agreed, first, request.q, query, observed, self._floor, self._unit_vectors, rows_of
            )
            order = newer_above_older_among_agreed(order, agreed, observed, close)
        # Of a served memory that another candidate may update, the newer is placed just
        # above it (at every limit), unless the question asks of the older one's thing (the
        # newer swaps a word it asks by): a link is a guess, and must not put another thing's
        # fact first.
        links = self._memories.links_among(order)
        linked = rows_of(sorted({r for link in links for r in link}))
        if links:
            order = linked_newer_first(
                order,
                links,
                request.limit,
                asks_of_older(request.q, {r: row.content or "" for r, row in linked.items()}),
            )
        candidates = {
            f.label: marked(f.candidate(stamps[f.label][0], reranked), f.label in distrusted)
            for f in fused
        }
        learned = None
        carried: dict[str, Carried] | None = None
        tag = request.container_tag
        stage = self.learned if request.learned and tag is not None else None
        if stage is not None and tag is not None and stage.runs(tag, request.as_ranked):
            # What the head's versions carry, read once: the stage weighs their writers'
            # trust, and what it serves (from its head) is shown with it.
            carried = self._carried([stamps[r][0] for r in order[: stage.head(request.limit)]])
            with apart("learned"):  # timed on its own, out of the lap it runs in
                learned = stage.apply(
                    order=order,
                    candidates=candidates,
                    observed=observed,
                    reference=reference,
                    carried=carried,
                    container_tag=tag,
                    agent=agent,
                    recall_id=recall_id,
                    limit=request.limit,
                    as_ranked=request.as_ranked,
                )
            order = learned.order
        served = order[: request.limit]
        by_label = {f.label: f for f in fused}
        rows = rows_of(served)
        if carried is None:
            carried = self._carried([rows[r].version_id for r in served if r in rows])
        newer_of: dict[int, list[int]] = {}
        for newer, older in links:
            newer_of.setdefault(older, []).append(newer)
        ids = {r: row.memory_id for r, row in linked.items()}
        did_learn = learned is not None and (learned.scores or learned.features)
        return Ranked(
            learned=(
                logged(learned, served, {r: v for r, (v, _) in stamps.items()})
                if learned is not None and did_learn
                else None
            ),
            ranker=None if learned is None else learned.digest,
            explore=None if learned is None else learned.explore,
            candidates=[candidates[f.label] for f in fused],
            hits=[
                Hit(
                    row=rows[r],
                    similarity=by_label[r].similarity or 0.0,
                    score=by_label[r].score,
                    outdated_by=tuple(ids[n] for n in newer_of.get(r, ()) if n in ids),
                    rerank_score=None if reranked is None else reranked.scores.get(r),
                    source=carried.get(rows[r].version_id),
                )
                for r in served
                if r in rows  # erased between the two reads
            ],
        )

    def _allowed(self, request: RecallRequest) -> tuple[AbstractSet[int], Hashable | None]:
        """The versions a search may return: latest (or valid at ``as_of``), live, in scope;
        and the name of that set when it is a container's live versions, which recur."""
        plain = request.as_of is None and request.fact_as_of is None
        if plain and not request.include_forgotten and request.container_tag:
            tag = request.container_tag
            return self._memories.live_rows(tag), live_scope(tag)
        visible = self._memories.visible_rows(
            container_tag=request.container_tag,
            as_of=request.as_of,
            include_forgotten=request.include_forgotten,
            fact_as_of=request.fact_as_of,
        )
        return visible, None

    def _carried(self, version_ids: list[str]) -> dict[str, Carried]:
        return {} if self._trust is None else self._trust.carried(version_ids)

    def _under_trust(
        self, min_trust: float | None, order: list[int], stamps: dict[int, tuple[str, int]]
    ) -> AbstractSet[int]:
        """The ranked versions that carry less trust than ``min_trust``."""
        if min_trust is None or self._trust is None or not order:
            return frozenset()
        carried = self._trust.carried([stamps[r][0] for r in order])
        prior = self._trust.params.prior_mean
        return frozenset(
            r
            for r in order
            if (c.trust if (c := carried.get(stamps[r][0])) is not None else prior) < min_trust
        )

    def _mmr(
        self, ranked: list[int], score: dict[int, float], needed: int, keep: AbstractSet[int]
    ) -> list[int]:
        """``ranking.mmr`` over the versions' stored vectors."""
        if len(ranked) < 3:
            return ranked
        matrix = self._unit_vectors(ranked)
        return mmr(ranked, score, matrix @ matrix.T, needed, keep)

    def _unit_vectors(self, labels: list[int]) -> npt.NDArray[np.float32]:
        """The stored unit vectors of ``labels``, one row each."""
        matrix = self._vectors.index.unit_vectors(labels)
        if matrix is None:  # the index is still copying a loaded graph in: read the table
            stored = dict(self._memories.vectors_of(labels))
            matrix = np.zeros((len(labels), self._vectors.index.dim), dtype=np.float32)
            for i, r in enumerate(labels):
                if r in stored:
                    matrix[i] = unit(from_bytes(stored[r]).reshape(1, -1))[0]
        return matrix
