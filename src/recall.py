"""Hybrid recall: vector and BM25 candidates, fused by reciprocal rank, weighted for recency,
floored, diversified, and recorded as a ``recall.performed`` event whose id is the trace id.

Memories and document chunks are ranked the same way, each family on its own indexes; a
``hybrid`` search fuses the two served lists by rank. Every candidate is kept in the event,
also those under the floor and those not served, with its similarity, both ranks and its
scores, so a trace shows why each one was or was not recalled.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
import uuid
from collections.abc import Callable, Hashable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import Future
from typing import Literal

import msgspec
import numpy as np
import numpy.typing as npt

from .embedding.port import Embedder, embed_bytes, from_bytes
from .eventlog import Actor, Appended, Draft, EventLog, Sealer
from .eventlog.events import Candidate, RecallPerformed
from .projections.documents import ChunkRow, DocumentProjection
from .projections.fulltext import FullTextIndex
from .projections.indexes import FullTextProjection, VectorProjection
from .projections.memories import MemoryProjection, VersionRow
from .projections.runner import ProjectionRunner
from .projections.vectors import unit
from .subjects import container_subject

Origin = Literal["rest", "proxy", "mcp", "capture", "import"]
Mode = Literal["memories", "documents", "hybrid"]

# Reciprocal rank fusion constant. 60 (the usual default) flattens the top of both lists: rank 1
# and rank 5 then differ by 6%, so a keyword-only or vector-only hit at rank 1 hardly beats noise
# found by both. With 10 they differ by 27% (bench/retrieval.py: recall_all@5 +0.03 to +0.06 on
# LoCoMo and LongMemEval, both tiers; docs/recall.md has the figures), with 8 by 31%.
RRF_K = 8
# The vector list's share of the fusion beside the BM25 list's 1.0. Words shared with the query
# are the stronger evidence with either embedder: at 0.7 (and RRF_K 8 rather than 10) LoCoMo
# recall_all@5 rose by 0.02 to 0.03 on both tiers (to 0.495 fast, 0.502 quality), LongMemEval
# turns stayed where they were (bench/retrieval.py; docs/recall.md).
VECTOR_WEIGHT = 0.7
FLOOR = 0.25  # cosine under which a candidate without a keyword match is not served
RECENCY_HALF_LIFE_DAYS = 30.0
RECENCY_WEIGHT = 0.25  # share of the score that decays with age
# MMR relevance weight. It reorders only, but at 0.7 a second piece of evidence that resembles
# the first (two turns of one story) was pushed out of the top 5 (LongMemEval recall_all@5 0.62
# -> 0.56); at 0.9 only near-duplicates move, and the figures are those without MMR.
MMR_LAMBDA = 0.9
# When recency is on, a candidate in the top AGREED_RANKS of both the vector and the BM25 list
# moves above such a candidate at least UPDATE_GAP_NS older (see _newer_above_older_among_agreed):
# on LongMemEval knowledge-update questions the newer value then ranks above the older one in
# 0.91 of cases instead of 0.79 (fast tier), recall unchanged, hit@1 0.01 lower. With stemmed
# BM25 terms, 3 ranks gave 0.875 and 5 give 0.91 again, recall unchanged.
AGREED_RANKS = 5
UPDATE_GAP_NS = 86_400 * 1_000_000_000  # one day: statements of one conversation keep their order
# The version of the ranking rules: the fusion constants above and the full-text analysis. A
# recall records it, so that a replay by a build that ranks otherwise reports the trace as not
# verifiable by that build, not as differing. 1 (recorded as no version): equal fusion
# weights, RRF 10, tantivy's default tokenizer. 2: stemming, stop words and question words,
# the vector list weighted 0.7, RRF 8, agreed candidates from the top five.
RANKING = 2
POOL = 50  # candidates taken from each index (at least; five times the limit when larger)
# A memory's keyword score is the BM25 of its content plus this share of the BM25 of its
# context (what it answers: a reply is found by the words of the question it answers). At 0.5
# LoCoMo recall_all@5 rose from 0.497 to 0.527 ranked offline on the benchmark's candidates
# (0.4: 0.520, 0.6: 0.523); the benchmark then measured 0.495 -> 0.519 on the fast tier and
# 0.502 -> 0.533 on the quality tier (docs/recall.md).
CONTEXT_WEIGHT = 0.5
_NS_PER_DAY = 86_400 * 1_000_000_000


class RecallRequest(msgspec.Struct, frozen=True, kw_only=True):
    q: str
    container_tag: str | None = None
    limit: int = 10
    mode: Mode = "memories"
    recency: bool = True
    diversify: bool | None = None
    as_of: int | None = None  # UTC ns
    include_forgotten: bool = False


class Hit(msgspec.Struct, frozen=True, kw_only=True):
    """A served result: a memory version or a document chunk."""

    similarity: float
    score: float
    row: VersionRow | None = None
    chunk: ChunkRow | None = None

    @property
    def trace_id(self) -> str:
        if self.row is not None:
            return self.row.version_id
        assert self.chunk is not None
        return chunk_trace_id(self.chunk)


class RecallResult(msgspec.Struct, frozen=True, kw_only=True):
    trace_id: str
    hits: list[Hit]
    seq: int | None  # the recall event's seq; None while it waits for its group commit


class _Ranked(msgspec.Struct, kw_only=True):
    """One family's outcome: every candidate for the trace, and the served hits in order."""

    candidates: list[Candidate]
    hits: list[Hit]


def _searched(index: FullTextIndex) -> int:
    """Where the index's disk/tail boundary stood for this thread's search (now, if it was
    not searched: then it decided nothing)."""
    seq = index.searched_seq()
    return index.visible_seq if seq is None else seq


def vector_digest(vector: npt.NDArray[np.floating]) -> str:
    """sha256 of a query vector's float32 bytes: lets a replay prove it embedded the query
    exactly as the recall did, without storing the vector."""
    return hashlib.sha256(embed_bytes(vector)).hexdigest()


def chunk_trace_id(chunk: ChunkRow) -> str:
    """How a trace names a chunk: documents do not version, so by document and index."""
    return f"{chunk.document_id}#{chunk.index}"


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
        context_fulltext: FullTextProjection,
        documents: DocumentProjection,
        document_vectors: VectorProjection,
        document_fulltext: FullTextProjection,
        runner: ProjectionRunner,
    ) -> None:
        self._log = log
        self._sealer = sealer
        self._embedder = embedder
        self._memories = memories
        self._vectors = vectors
        self._fulltext = fulltext
        self._context_fulltext = context_fulltext
        self._documents = documents
        self._document_vectors = document_vectors
        self._document_fulltext = document_fulltext
        self._runner = runner
        self._in_flight: set[Future[Appended]] = set()
        self._in_flight_lock = threading.Lock()

    def search(
        self, request: RecallRequest, *, origin: Origin, actor: Actor, durable: bool = True
    ) -> RecallResult:
        """Rank, serve and record. With ``durable`` the recall event is on disk and applied to
        the projections before this returns; without, it is queued for the next group commit
        and the answer goes out at once (``seq`` is then ``None``; ``settle`` waits for it)."""
        latency: dict[str, float] = {}
        clock = time.perf_counter()

        def lap(stage: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            latency[stage] = round((now - clock) * 1000, 3)
            clock = now

        view = self._runner.position()  # what the ranking reads, for a replay to fold to
        for projection in (self._fulltext, self._context_fulltext, self._document_fulltext):
            projection.index.forget_searched_seq()
        query = self._embedder.embed([request.q])[0]
        lap("embed")
        families: list[_Ranked] = []
        if request.mode in ("memories", "hybrid"):
            families.append(self._memories_ranked(request, query, lap))
        if request.mode in ("documents", "hybrid"):
            families.append(self._documents_ranked(request, query, lap))
        hits = _interleave([f.hits for f in families])[: request.limit]
        lap("fuse")
        served = {hit.trace_id for hit in hits}
        candidates = [
            msgspec.structs.replace(c, served=c.version_id in served)
            for family in families
            for c in family.candidates
        ]
        recall_id = f"trc_{uuid.uuid4().hex}"
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
                "memories": _searched(self._fulltext.index),
                "contexts": _searched(self._context_fulltext.index),
                "documents": _searched(self._document_fulltext.index),
            },
            candidates=candidates,
            served=[hit.trace_id for hit in hits],
            latency_ms=latency,
            params={
                "limit": request.limit,
                "searchMode": request.mode,
                "recency": request.recency,
                "diversify": request.diversify,
                "asOf": request.as_of,
                "includeForgotten": request.include_forgotten,
                "ranking": RANKING,
            },
        )
        future = self._log.submit([Draft(actor, event)])
        if not durable:
            with self._in_flight_lock:
                self._in_flight.add(future)
            future.add_done_callback(self._landed)
            return RecallResult(trace_id=recall_id, hits=hits, seq=None)
        seq = future.result().seqs[0]
        self._runner.sync_to(seq)  # the trace is in the projections as soon as it is answered
        return RecallResult(trace_id=recall_id, hits=hits, seq=seq)

    def settle(self) -> None:
        """Wait until every recall event answered ahead of its commit is durable, and apply
        the log to the projections: what ``/inspect`` reads then holds every trace answered."""
        with self._in_flight_lock:
            pending = list(self._in_flight)
        for future in pending:
            with contextlib.suppress(Exception):
                future.result()
        self._runner.sync_to(self._log.head().seq)

    def _landed(self, future: Future[Appended]) -> None:
        with self._in_flight_lock:
            self._in_flight.discard(future)

    # --- memories --------------------------------------------------------------------------

    def _memories_ranked(
        self, request: RecallRequest, query: npt.NDArray[np.float32], lap: Callable[[str], None]
    ) -> _Ranked:
        allowed, scope = self._allowed(request)
        by_vector, by_text = _candidates(
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
        reference = request.as_of if request.as_of is not None else newest

        def weight(row_id: int) -> float:
            if not request.recency:
                return 1.0
            age_days = max(0.0, (reference - observed[row_id]) / _NS_PER_DAY)
            decay = float(0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS))
            return (1.0 - RECENCY_WEIGHT) + RECENCY_WEIGHT * decay

        fused = _fuse(by_vector, by_text, list(stamps), weight)
        diversify = request.diversify if request.diversify is not None else request.limit >= 5
        order = [f.label for f in fused if not f.below_floor]
        # With recency on, these may still move up into the answer (the last step below).
        agreed = _agreed(fused) if request.recency else set()
        if diversify:
            # MMR is quadratic: reorder only the head the answer can draw from.
            head = max(3 * request.limit, 20)
            placed = self._mmr(
                order[:head], {f.label: f.score for f in fused}, request.limit, agreed
            )
            order = placed + order[len(placed) :]
        if request.recency:
            order = _newer_above_older_among_agreed(order, agreed, observed)
        by_label = {f.label: f for f in fused}
        served = order[: request.limit]
        rows = self._memories.by_row_ids(served)
        return _Ranked(
            candidates=[f.candidate(stamps[f.label][0]) for f in fused],
            hits=[
                Hit(row=rows[r], similarity=by_label[r].similarity or 0.0, score=by_label[r].score)
                for r in served
                if r in rows  # erased between the two reads
            ],
        )

    def _allowed(self, request: RecallRequest) -> tuple[AbstractSet[int], Hashable | None]:
        """The versions a search may return: latest (or valid at ``as_of``), live, in scope;
        and the name of that set when it is a container's live versions, which recur."""
        if request.as_of is None and not request.include_forgotten and request.container_tag:
            tag = request.container_tag
            return self._memories.live_rows(tag), live_scope(tag)
        visible = self._memories.visible_rows(
            container_tag=request.container_tag,
            as_of=request.as_of,
            include_forgotten=request.include_forgotten,
        )
        return visible, None

    def _mmr(
        self, ranked: list[int], score: dict[int, float], needed: int, keep: AbstractSet[int]
    ) -> list[int]:
        """Maximal marginal relevance: reorder so near-duplicates do not crowd the top.

        It only reorders: relevance is the fused score (scaled to the best one), redundancy
        the highest cosine to a memory already placed. Placing stops once ``needed`` are placed
        and so is every label of ``keep`` among ``ranked``: what follows (the caller keeps it in
        its fused order) can no longer reach the answer.
        """
        if len(ranked) < 3:
            return ranked
        unplaced = set(keep) & set(ranked)
        matrix = self._vectors.index.unit_vectors(ranked)
        if matrix is None:  # the index is still copying a loaded graph in: read the table
            stored = dict(self._memories.vectors_of(ranked))
            matrix = np.zeros((len(ranked), self._vectors.index.dim), dtype=np.float32)
            for i, r in enumerate(ranked):
                if r in stored:
                    matrix[i] = unit(from_bytes(stored[r]).reshape(1, -1))[0]
        cosines = matrix @ matrix.T
        relevance = np.asarray([score[r] for r in ranked], dtype=np.float64)
        relevance /= relevance.max() or 1.0
        redundancy = np.zeros(len(ranked), dtype=np.float64)
        placed = np.zeros(len(ranked), dtype=bool)
        chosen: list[int] = []
        for _ in ranked:
            if len(chosen) >= needed and not unplaced:
                break
            value = MMR_LAMBDA * relevance - (1.0 - MMR_LAMBDA) * redundancy
            value[placed] = -np.inf
            best = int(np.argmax(value))  # the first of equals: the better-ranked one
            chosen.append(ranked[best])
            unplaced.discard(ranked[best])
            placed[best] = True
            np.maximum(redundancy, cosines[best], out=redundancy)
        return chosen

    # --- documents -------------------------------------------------------------------------

    def _documents_ranked(
        self, request: RecallRequest, query: npt.NDArray[np.float32], lap: Callable[[str], None]
    ) -> _Ranked:
        """Chunks rank by fused vector and BM25 ranks; documents do not version, so ``asOf``
        and recency do not apply to them."""
        allowed = self._documents.live_labels(request.container_tag)
        by_vector, by_text = _candidates(
            self._document_vectors,
            (self._document_fulltext, None),
            request,
            query,
            allowed,
            lap,
            "doc",
            live_scope(request.container_tag),
        )
        chunks = self._documents.chunks(list({r for r, _ in by_vector} | {r for r, _ in by_text}))
        fused = _fuse(by_vector, by_text, list(chunks), lambda _: 1.0)
        return _Ranked(
            candidates=[f.candidate(chunk_trace_id(chunks[f.label])) for f in fused],
            hits=[
                Hit(chunk=chunks[f.label], similarity=f.similarity or 0.0, score=f.score)
                for f in fused
                if not f.below_floor
            ][: request.limit],
        )


class _Fused(msgspec.Struct, kw_only=True):
    label: int
    similarity: float | None
    bm25: float | None
    vector_rank: int | None
    bm25_rank: int | None
    fused: float
    score: float
    below_floor: bool

    def candidate(self, trace_id: str) -> Candidate:
        return Candidate(
            version_id=trace_id,
            similarity=self.similarity,
            bm25=self.bm25,
            fused=self.fused,
            score=self.score,
            vector_rank=self.vector_rank,
            bm25_rank=self.bm25_rank,
            below_floor=self.below_floor,
        )


def live_scope(container_tag: str | None) -> Hashable:
    """The scope name of a container's live entries (every container's, for ``None``)."""
    return ("live", container_tag)


def _candidates(
    vectors: VectorProjection,
    fulltext: tuple[FullTextProjection, FullTextProjection | None],
    request: RecallRequest,
    query: npt.NDArray[np.float32],
    allowed: AbstractSet[int],
    lap: Callable[[str], None],
    stage: str,
    scope: Hashable | None,
) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """Vector and BM25 candidates among ``allowed``; ``scope`` names the set ``allowed`` is
    (see ``VectorIndex.search``), if it is one that recurs. ``fulltext`` is the index of the
    texts and, if the family has one, the index of their contexts."""
    pool = max(POOL, request.limit * 5)
    by_vector = vectors.index.search(query, pool, allowed=allowed, scope=scope) if allowed else []
    lap(f"{stage}_vector")
    # The full-text index holds every version (superseded and forgotten ones too) and filters
    # only by container: ask for twice the pool so that filtering to the allowed versions
    # still leaves a full pool in the usual case.
    texts, contexts = fulltext
    wanted = 2 * pool
    found = texts.index.search(request.q, wanted, container=request.container_tag)
    if contexts is not None:
        in_contexts = contexts.index.search(request.q, wanted, container=request.container_tag)
        found = _with_contexts(found, in_contexts)[:wanted]
    by_text = [(label, score) for label, score in found if label in allowed][:pool]
    lap(f"{stage}_bm25")
    return by_vector, by_text


def _with_contexts(
    found: list[tuple[int, float]], in_contexts: list[tuple[int, float]]
) -> list[tuple[int, float]]:
    """The keyword list with each label's context score added at ``CONTEXT_WEIGHT``, best
    first (equal scores by label)."""
    if not in_contexts:
        return found
    scores = dict(found)
    for label, score in in_contexts:
        scores[label] = scores.get(label, 0.0) + CONTEXT_WEIGHT * score
    return sorted(scores.items(), key=lambda hit: (-hit[1], hit[0]))


def _fuse(
    by_vector: Sequence[tuple[int, float]],
    by_text: Sequence[tuple[int, float]],
    known: Sequence[int],
    weight: Callable[[int], float],
) -> list[_Fused]:
    """Reciprocal rank fusion of the two lists (the vector list's share weighted by
    ``VECTOR_WEIGHT``), times ``weight``, best first; ``known`` are the labels still
    resolvable (a label erased since the index answered is dropped)."""
    vector_rank = {label: i + 1 for i, (label, _) in enumerate(by_vector)}
    text_rank = {label: i + 1 for i, (label, _) in enumerate(by_text)}
    similarity = dict(by_vector)
    bm25 = dict(by_text)
    fused: list[_Fused] = []
    for label in known:
        rrf = 0.0
        if label in vector_rank:
            rrf += VECTOR_WEIGHT / (RRF_K + vector_rank[label])
        if label in text_rank:
            rrf += 1.0 / (RRF_K + text_rank[label])
        fused.append(
            _Fused(
                label=label,
                similarity=similarity.get(label),
                bm25=bm25.get(label),
                vector_rank=vector_rank.get(label),
                bm25_rank=text_rank.get(label),
                fused=rrf,
                score=rrf * weight(label),
                below_floor=label not in text_rank and similarity.get(label, 0.0) < FLOOR,
            )
        )
    fused.sort(key=lambda f: (-f.score, f.label))
    return fused


def _agreed(fused: Sequence[_Fused]) -> set[int]:
    """The candidates both indexes rank in their top ``AGREED_RANKS``."""
    return {
        f.label
        for f in fused
        if f.vector_rank is not None
        and f.vector_rank <= AGREED_RANKS
        and f.bm25_rank is not None
        and f.bm25_rank <= AGREED_RANKS
    }


def _newer_above_older_among_agreed(
    order: list[int], agreed: AbstractSet[int], observed: Mapping[int, int]
) -> list[int]:
    """Among ``agreed`` (the candidates both indexes rank in their top ``AGREED_RANKS``), each
    one moves just above the first of them placed higher that it is at least ``UPDATE_GAP_NS``
    newer than.

    When the meaning and the words of several memories answer the query best, the newer
    statement is the one to believe: an update ("I have 25 postcards now") above the value it
    replaces ("I have 10 postcards"), whatever the days between them. Statements of the same
    day (one conversation) keep their order by relevance. These candidates sit at the very top
    of the fused list, so what is in the top five rarely changes.
    """
    if len(agreed) < 2:
        return order
    reordered = list(order)
    for label in [r for r in order if r in agreed]:
        at = reordered.index(label)
        when = observed[label]
        for place in range(at):
            other = reordered[place]
            if other in agreed and when - observed[other] >= UPDATE_GAP_NS:
                reordered.insert(place, reordered.pop(at))
                break
    return reordered


def _interleave(lists: list[list[Hit]]) -> list[Hit]:
    """One list from several served lists, by reciprocal rank (a single list is kept as is)."""
    if len(lists) == 1:
        return lists[0]
    scored = [
        (1.0 / (RRF_K + position), n, position, hit)
        for n, hits in enumerate(lists)
        for position, hit in enumerate(hits, start=1)
    ]
    scored.sort(key=lambda s: (-s[0], -s[3].score, s[1], s[2]))
    return [hit for *_, hit in scored]
