"""Retrieval quality on LoCoMo and LongMemEval_S (dev shares): hybrid recall beside BM25 alone.

Follows the offline recipe of ``bench-data/RECIPE.md`` (section 4): every LoCoMo conversation
and every LongMemEval question's haystack is written into its own container of a fresh data
dir, one turn per memory, through ``Writes.write`` (one batch per session), with
``observed_at`` set from the session date in UTC. A LoCoMo turn is written with the turn it
answers as its ``context`` (the previous turn, when the other speaker said it); LongMemEval's
turns are the user's side only, so none has one. Each question is asked through
``Recall.search`` with the product's defaults, and a BM25-only baseline ranks every turn (one
document each, as the recipe's lexical baseline) with a plain tantivy index of its own. A served
version is credited with the turns whose text it holds (its own and the exact duplicates folded
into it), not with the older versions of its chain. hit@k, recall_all@k, recall@k and NDCG@k are
printed per category, with the knowledge-update ordering measures of LongMemEval. No figure is
asserted; the goals are printed as met or not met.

    .venv/bin/python bench/retrieval.py [--tier quality|fast] [--dataset both|locomo|longmemeval]
        [--limit-conversations N] [--limit-questions N] [--supersede-threshold T] [--json]
        [--rerank [--rerank-pool 10,20,30]] [--dump FILE]

With ``--rerank`` every question is asked again with ``rerank`` on, once per pool size of
``--rerank-pool`` (default: the product's), and a "hybrid plus rerank" line is printed per pool
beside the others, with the time a reranked search took in this process. ``--dump FILE``
writes each answerable question's served list and fused head (texts, dates, ranks) as JSON
lines, so that an ordering rule can be tried offline on the very candidates.

Every question's pool is measured too: recall_all and recall within the first 10, 20, 30, 50
and 100 of the fused order (what a rerank of that pool reads), of the dense stage, of the
stemmed BM25 line, and of the fused order with each candidate's neighbouring turns placed
after it. ``--configurations`` runs every tier (each in a child process) with the rerank pools
of the agent-facing default and of a REST ``rerank: true``, and prints one table of every
configuration with the p50 and p95 of each stage of its searches (``retrieval_table.py``);
``--write docs/benchmarks.md`` puts it into the page.

The evaluation data is read from ``../shared/bench-data`` beside the repository (``--data``
overrides it) and is never copied: LoCoMo is licensed for non-commercial use only.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import platform
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import tantivy
from latency import latency_summary

from mnemolog.eventlog import Actor
from mnemolog.eventlog.events import Candidate, RecallPerformed
from mnemolog.memory import Core, Hit, NewMemory, RecallRequest, WriteOutcome
from mnemolog.memory.recall.ranking import RERANK_POOL
from mnemolog.projections.fulltext.analysis import ANALYZER, TOKENIZER
from mnemolog.projections.memories.rows import VersionRow
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "bench-data"
KS = (1, 3, 5, 10)
# Depths at which the pool is measured: what could reach the reranker at each pool size.
POOL_KS = (10, 20, 30, 50, 100)
LIMIT = 10  # memories asked of recall for the turn-level metrics: the API's default
SESSION_LIMIT = 30  # memories asked when ranking sessions, so that ~10 distinct ones show
BM25_DEPTH = 200  # BM25 hits kept for the baseline's session ranking
BATCH = 64  # at most this many turns per write (a session is one batch when it fits)
# The goals (issue 14), each against the strongest BM25 line of the same run and turns.
GOAL_MARGIN = 0.06  # recall_all@5 of the default configuration above the strongest BM25
GOAL_RERANK_MARGIN = 0.15  # recall_all@5 of hybrid plus rerank above the strongest BM25
GOAL_ORDERING = 0.95  # newer value ranked above the older one
GOAL_AUROC = 0.75  # abstention: the top score separates answerable from unanswerable
# The user's own history, imported as the user would import it: the user's agent ("local"),
# whose writes trust never refuses. An agent of its own would be refused part-way through a
# LongMemEval haystack (hundreds of writes in a burst), which is not what is measured here.
ACTOR = Actor(agent_id="local", protocol="import")

LOCOMO_CATEGORIES = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain"}
LME_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "temporal-reasoning",
    "knowledge-update",
    "multi-session",
)
ALL = "ALL"
ADVERSARIAL = "adversarial"  # LoCoMo category 5: the question names the wrong person or event
ABSTENTION = "abstention"  # LongMemEval's _abs questions

# The lines of the baseline table, on the same turns and questions, in this order; the rerank
# lines (one per pool asked) follow them.
LINES: tuple[tuple[str, str], ...] = (
    ("turn/bm25-stemmed", "BM25, stop words + stemming"),
    ("turn/bm25", "plain BM25"),
    ("turn/vector", "vector only (dense stage)"),
    ("turn/no-recency", "hybrid without recency"),
    ("turn", "hybrid (default)"),
)
BM25_LINES = ("turn/bm25-stemmed", "turn/bm25")
# The lists whose depth is measured (the pool table): what each could hand a reranker.
POOL_LINES: tuple[tuple[str, str], ...] = (
    ("pool/bm25-stemmed", "BM25, stop words + stemming"),
    ("pool/vector", "dense stage"),
    ("pool/fused", "fused (what the reranker reads)"),
    ("pool/fused-norecency", "fused without the recency weight"),
    ("pool/rrf60", "reciprocal rank fusion, k 60, lists alike"),
    ("pool/fused+neighbours", "fused, each with its neighbouring turns"),
)
# Top scores whose AUROC is reported: each line's field, as the product (or BM25) returns it.
TOP_SCORES: tuple[tuple[str, str], ...] = (
    ("hybrid/score", "hybrid (default), top hit's score"),
    ("hybrid/similarity", "hybrid (default), top hit's similarity"),
    ("vector/similarity", "vector only, top similarity"),
    ("rerank/rerank_score", "hybrid + rerank, top hit's rerank_score"),
    ("rerank/score", "hybrid + rerank, top hit's score"),
    ("bm25-stemmed/score", "BM25, stop words + stemming, top score"),
    ("bm25/score", "plain BM25, top score"),
)


# --- the data, as turns and questions ---------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    turn_id: str
    session: str
    text: str
    observed_at: str  # ISO 8601 with an explicit UTC offset
    metadata: dict[str, object] | None = None
    context: str | None = None  # the turn this one answers: the other speaker's last turn


@dataclass(frozen=True)
class Question:
    qid: str
    category: str
    text: str
    gold: frozenset[str]  # turn ids
    gold_sessions: frozenset[str]
    newer_older: tuple[str, str] | None = None  # knowledge-update: (new, old) gold sessions
    # False for the questions the data has no answer to (LoCoMo category 5, LongMemEval's
    # ``_abs``): asked only for the abstention figure, never scored for recall.
    answerable: bool = True


@dataclass
class Haystack:
    tag: str
    sessions: list[list[Turn]]
    questions: list[Question]


_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")


def normalise_evidence(raw: Iterable[str]) -> list[str]:
    """LoCoMo evidence ids as ``D<s>:<t>``: split on ``;``, ``,`` and spaces, fix the forms."""
    ids: list[str] = []
    for item in raw:
        for piece in re.split(r"[;,\s]+", str(item)):
            match = _EVIDENCE.fullmatch(piece)
            if match:
                ids.append(f"D{int(match[1])}:{int(match[2])}")
    return ids


def _iso(moment: datetime, offset_s: int) -> str:
    return (moment + timedelta(seconds=offset_s)).replace(tzinfo=UTC).isoformat()


def load_locomo(
    data: Path, limit: int | None, per_conversation: int | None = None
) -> list[Haystack]:
    """The first ``limit`` conversations; of each, the first ``per_conversation`` answerable
    questions and as many unanswerable ones (all of them when None)."""
    samples = json.loads((data / "dev" / "locomo10_dev.json").read_text())
    out: list[Haystack] = []
    for sample in samples[:limit]:
        conv = sample["conversation"]
        # Iterate over the sessions themselves: conv-26 has date keys with no session.
        numbers = sorted(int(m[1]) for key in conv if (m := re.fullmatch(r"session_(\d+)", key)))
        sessions: list[list[Turn]] = []
        known: set[str] = set()
        for n in numbers:
            date = datetime.strptime(conv[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
            turns: list[Turn] = []
            for i, turn in enumerate(conv[f"session_{n}"]):
                (turn_id,) = normalise_evidence([turn["dia_id"]]) or [turn["dia_id"]]
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares image: {turn['blip_caption']}]"
                metadata: dict[str, object] = {"speaker": turn["speaker"], "session": n}
                # A reply is written with the turn it answers, as a client that knows who
                # said what would: the previous turn, when the other speaker said it.
                before = turns[-1] if turns else None
                context = (
                    before.text
                    if before is not None
                    and before.metadata is not None
                    and before.metadata["speaker"] != turn["speaker"]
                    else None
                )
                turns.append(Turn(turn_id, f"D{n}", text, _iso(date, i), metadata, context))
                known.add(turn_id)
            sessions.append(turns)
        questions = []
        for i, qa in enumerate(sample["qa"]):
            category = LOCOMO_CATEGORIES.get(int(qa["category"]))
            gold = frozenset(e for e in normalise_evidence(qa.get("evidence", [])) if e in known)
            sessions_of = frozenset(g.split(":")[0] for g in gold)
            qid = f"{sample['sample_id']}#{i}"
            if category is None:  # 5, adversarial: not part of recall, asked for abstention
                questions.append(
                    Question(qid, ADVERSARIAL, qa["question"], gold, sessions_of, answerable=False)
                )
                continue
            if not gold:
                continue
            questions.append(Question(qid, category, qa["question"], gold, sessions_of))
        if per_conversation is not None:
            questions = [q for q in questions if q.answerable][:per_conversation] + [
                q for q in questions if not q.answerable
            ][:per_conversation]
        out.append(Haystack(sample["sample_id"], sessions, questions))
    return out


def load_longmemeval(data: Path, limit: int | None) -> list[Haystack]:
    """The answerable questions with a user-side target, and the ``_abs`` ones (asked for the
    abstention figure only); ``limit`` caps each of the two kinds on its own."""
    with gzip.open(data / "dev" / "longmemeval_s_useronly_dev.json.gz", "rb") as file:
        raw = json.load(file)
    stored = raw["sessions"]
    out: list[Haystack] = []
    taken: Counter[bool] = Counter()
    for q in raw["questions"]:
        answerable = not q["question_id"].endswith("_abs")
        if limit is not None and taken[answerable] >= limit:
            continue
        gold = frozenset(
            f"{sid}_{index + 1}"
            for sid in q["answer_session_ids"]
            for index, _, has_answer in stored.get(sid, ())
            if has_answer
        )
        if answerable and not gold:  # no user-side target (mostly single-session-assistant)
            continue
        taken[answerable] += 1
        gold_sessions = frozenset(t.rsplit("_", 1)[0] for t in gold)
        sessions: list[list[Turn]] = []
        dates: dict[str, datetime] = {}
        for sid, when in zip(q["haystack_session_ids"], q["haystack_dates"], strict=True):
            date = datetime.strptime(when, "%Y/%m/%d (%a) %H:%M")
            dates.setdefault(sid, date)
            sessions.append(
                [
                    Turn(f"{sid}_{index + 1}", sid, content, _iso(date, i))
                    for i, (index, content, _) in enumerate(stored[sid])
                ]
            )
        newer_older = None
        if q["question_type"] == "knowledge-update" and len(gold_sessions) == 2:
            old, new = sorted(gold_sessions, key=lambda s: dates[s])
            newer_older = (new, old)
        question = Question(
            q["question_id"],
            q["question_type"] if answerable else ABSTENTION,
            q["question"],
            gold,
            gold_sessions,
            newer_older if answerable else None,
            answerable,
        )
        out.append(Haystack(f"lme-{q['question_id']}", sessions, [question]))
    return out


# --- metrics ----------------------------------------------------------------------------------


def score(items: Sequence[frozenset[str]], gold: frozenset[str]) -> dict[str, float]:
    """Metrics at every k for a ranked list of items, each standing for a set of source ids.

    An item is relevant when it holds a gold id no earlier item held, so a version holding two
    gold turns (exact duplicates) counts once in NDCG and NDCG stays within [0, 1].
    """
    rank: dict[str, int] = {}
    relevant: list[int] = []
    for position, item in enumerate(items, start=1):
        fresh = (item & gold) - rank.keys()
        relevant.append(1 if fresh else 0)
        rank.update(dict.fromkeys(fresh, position))
    out: dict[str, float] = {}
    for k in KS:
        found = sum(1 for r in rank.values() if r <= k)
        dcg = sum(rel / math.log2(i + 2) for i, rel in enumerate(relevant[:k]))
        ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(gold))))
        out[f"hit@{k}"] = float(found > 0)
        out[f"recall_all@{k}"] = float(found == len(gold))
        out[f"recall@{k}"] = found / len(gold)
        out[f"ndcg@{k}"] = dcg / ideal
    return out


def reach(items: Sequence[frozenset[str]], gold: frozenset[str]) -> dict[str, float]:
    """recall_all and recall at each of ``POOL_KS`` for a ranked list: whether every gold id
    (and what share of them) is within its first k items."""
    out: dict[str, float] = {}
    for k in POOL_KS:
        found = gold & frozenset().union(*items[:k])
        out[f"recall_all@{k}"] = float(found == gold)
        out[f"recall@{k}"] = len(found) / len(gold)
    return out


def rrf60(candidate: Candidate) -> float:
    """The textbook reciprocal rank fusion (k 60, both lists weighed alike), as a sort key."""
    score = 0.0
    for rank in (candidate.vector_rank, candidate.bm25_rank):
        if rank is not None:
            score += 1.0 / (60 + rank)
    return -score


def with_neighbours(items: Sequence[str], neighbours: Callable[[str], Sequence[str]]) -> list[str]:
    """``items`` with each one's neighbours placed right after it (first place kept)."""
    out: dict[str, None] = {}
    for item in items:
        out.setdefault(item)
        for other in neighbours(item):
            out.setdefault(other)
    return list(out)


def sessions_ranked(items: Iterable[Iterable[str]], session_of: dict[str, str]) -> list[str]:
    """Turn ranks collapsed to session ranks, first occurrence kept."""
    seen: dict[str, None] = {}
    for turns in items:
        for turn in turns:
            seen.setdefault(session_of[turn])
    return list(seen)


def ordering(ranked: Sequence[str], new: str, old: str) -> dict[str, float]:
    """Knowledge-update measures on a session ranking (RECIPE 4, "Which categories")."""
    position = {s: i for i, s in enumerate(ranked, start=1)}
    r_new, r_old = position.get(new, math.inf), position.get(old, math.inf)
    return {
        "newer_above_older": float(r_new < r_old),
        "newer@1": float(r_new == 1),
        "both@5": float(r_new <= 5 and r_old <= 5),
        "stale_only@5": float(r_old <= 5 and r_new > 5),
    }


class Tally:
    """Per-category sums of per-question figures; ``table`` gives the means and n."""

    def __init__(self) -> None:
        self._sums: dict[str, Counter[str]] = defaultdict(Counter)
        self._n: Counter[str] = Counter()

    def add(self, category: str, figures: dict[str, float]) -> None:
        for name in (category, ALL):
            self._sums[name].update(figures)
            self._n[name] += 1

    def table(self, order: Sequence[str]) -> dict[str, dict[str, float]]:
        names = [c for c in order if c in self._n] + [ALL]
        return {
            c: {"n": self._n[c]} | {m: v / self._n[c] for m, v in self._sums[c].items()}
            for c in names
            if self._n[c]
        }


# --- one dataset through the store ------------------------------------------------------------


@dataclass
class StoreStats:
    turns: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    # how each supersede and link was decided (the judgement's reason), and how many of them
    # took one speaker's turn for a correction of another speaker's
    supersede_reasons: Counter[str] = field(default_factory=Counter)
    link_reasons: Counter[str] = field(default_factory=Counter)
    cross_speaker_supersedes: int = 0
    gold_turns: int = 0
    gold_absorbed: int = 0  # gold turns whose own text is not a live version
    ku_shared_chain: int = 0  # knowledge-update pairs whose new and old turns share a chain
    served: int = 0
    served_without_date: int = 0
    ku_old_served_live: int = 0  # old-value turn served as a live, unflagged memory (top 10)


@dataclass
class Run:
    dataset: str
    tally: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    stats: StoreStats = field(default_factory=StoreStats)
    ingest_s: float = 0.0
    query_s: float = 0.0
    baseline_s: float = 0.0
    open_s: float = 0.0
    containers: int = 0
    rerank_s: dict[int, list[float]] = field(default_factory=dict)  # pool -> each search
    # line -> stage -> each answerable question's ms (the trace's stages, and the whole call)
    stage_ms: dict[str, dict[str, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    # (answerable, each line's top score) of every question asked, unanswerable ones too
    abstention: list[tuple[bool, dict[str, float]]] = field(default_factory=list)


def run_dataset(
    name: str, haystacks: list[Haystack], args: argparse.Namespace, scratch: Path
) -> Run:
    """Each haystack in a fresh data dir of its own (the recipe's fresh store per
    conversation or question), or all of them in one data dir with ``--store shared``."""
    run = Run(name)
    shared: Runtime | None = None
    try:
        for number, haystack in enumerate(haystacks, start=1):
            if args.store == "shared":
                if shared is None:
                    shared = _open(scratch / name, args, run)
                _one_haystack(shared, haystack, run, args)
            else:
                runtime = _open(scratch / haystack.tag, args, run)
                try:
                    _one_haystack(runtime, haystack, run, args)
                finally:
                    runtime.close()
                    shutil.rmtree(scratch / haystack.tag)
            run.containers += 1
            print(f"\r{name}: {number}/{len(haystacks)} containers", end="", file=sys.stderr)
        print(file=sys.stderr)
    finally:
        if shared is not None:
            shared.close()
    return run


def _speaker(turn: Turn) -> object:
    """Who said a turn: LoCoMo's speaker; LongMemEval's turns here are all the user's."""
    return (turn.metadata or {}).get("speaker")


def _open(data_dir: Path, args: argparse.Namespace, run: Run) -> Runtime:
    started = time.perf_counter()
    settings = Settings(
        data_dir=data_dir,
        embedder=args.tier,
        model_cache_dir=args.model_cache_dir,
        supersede_threshold=args.supersede_threshold,
        log_map_size=256 << 20,  # the log grows its map as needed; this saves most regrowths
    )
    runtime = Runtime(settings)
    run.open_s += time.perf_counter() - started
    return runtime


def write_turns(core: Core, haystack: Haystack) -> Iterator[tuple[Turn, WriteOutcome]]:
    """Every turn of ``haystack`` written as a memory of its container through
    ``Writes.write``, one batch per session (at most ``BATCH`` turns), with its outcome; then
    the full-text indexes committed, as their committer would half a second later.

    BM25 scores with the statistics of the last commit, and the committer's thread commits on
    a timer: asked at once, the first questions would be ranked by whatever had been committed
    by then, and two runs of the same code differed by up to 0.011 of recall_all@5 in a
    category. A question is asked of the settled store, as a user asks it."""
    for session in haystack.sessions:
        for start in range(0, len(session), BATCH):
            turns = session[start : start + BATCH]
            items = [
                NewMemory(
                    content=t.text,
                    observed_at=t.observed_at,
                    metadata=t.metadata,
                    context=t.context,
                )
                for t in turns
            ]
            yield from zip(turns, core.writes.write(haystack.tag, items, ACTOR), strict=True)
    core.fulltext.index.commit()
    core.context_fulltext.index.commit()


def _one_haystack(runtime: Runtime, haystack: Haystack, run: Run, args: argparse.Namespace) -> None:
    core = runtime.core
    tag = haystack.tag
    started = time.perf_counter()
    chain_of: dict[str, str] = {}  # turn id -> memory id
    # version id -> the turns whose text it holds: its own, and exact duplicates of it
    turns_of: dict[str, dict[str, None]] = defaultdict(dict)
    version_turn: dict[str, Turn] = {}  # version id -> the turn whose text it holds
    session_of: dict[str, str] = {}
    latest_turn: dict[str, Turn] = {}  # memory id -> the turn its latest version holds
    for turn, outcome in write_turns(core, haystack):
        chain_of[turn.turn_id] = outcome.memory_id
        turns_of[outcome.version_id][turn.turn_id] = None
        session_of[turn.turn_id] = turn.session
        run.stats.statuses[outcome.status] += 1
        run.stats.turns += 1
        if outcome.status == "superseded":
            run.stats.supersede_reasons[outcome.reason or "?"] += 1
            run.stats.cross_speaker_supersedes += _speaker(
                latest_turn[outcome.memory_id]
            ) != _speaker(turn)
        if outcome.possibly_updates is not None:
            run.stats.link_reasons[outcome.reason or "?"] += 1
        if outcome.status != "deduplicated":
            latest_turn[outcome.memory_id] = turn
            version_turn[outcome.version_id] = turn
    run.ingest_s += time.perf_counter() - started

    live = core.memories.by_row_ids(sorted(core.memories.live_rows(tag)))
    live_turns = {t for row in live.values() for t in turns_of[row.version_id]}

    # RECIPE 4: a returned item stands for the source turns it was derived from. A served
    # version holds the text of one turn (and of the exact duplicates folded into it); the
    # turns of the older versions of its chain are not in it, so they are not credited.
    def items_of(rows: Iterable[VersionRow]) -> list[frozenset[str]]:
        return [frozenset(turns_of[row.version_id]) for row in rows]

    # Write order of the live versions: a version's neighbours are the live versions of the
    # turns just before and after its own, in the same session.
    written = [t for session in haystack.sessions for t in session]
    live_version_of: dict[str, str] = {}
    for version_id, turn in version_turn.items():
        if turn.turn_id in live_turns:
            live_version_of[turn.turn_id] = version_id
    position = {t.turn_id: i for i, t in enumerate(written)}

    def neighbours_of(version_id: str) -> list[str]:
        turn = version_turn.get(version_id)
        if turn is None:
            return []
        i = position[turn.turn_id]
        near = [written[j] for j in (i - 1, i + 1) if 0 <= j < len(written)]
        return [
            live_version_of[t.turn_id]
            for t in near
            if t.session == turn.session and t.turn_id in live_version_of
        ]

    answerable = [q for q in haystack.questions if q.answerable]
    for question in answerable:
        run.stats.gold_turns += len(question.gold)
        run.stats.gold_absorbed += len(question.gold - live_turns)
        if question.newer_older is not None:
            new, old = question.newer_older
            chains = {
                s: {chain_of[t] for t in question.gold if session_of[t] == s} for s in (new, old)
            }
            run.stats.ku_shared_chain += bool(chains[new] & chains[old])

    # Every question is asked; the unanswerable ones only give their top scores to the
    # abstention figure. ``tops`` holds each question's top score of every line.
    tops: dict[str, dict[str, float]] = {q.qid: {} for q in haystack.questions}

    # Hybrid recall, as an agent would call it (the product's defaults); its trace holds the
    # dense stage's candidates in their vector order, which is the vector-only line.
    started = time.perf_counter()
    for question in haystack.questions:
        asked = _ask(runtime, question.text, tag, LIMIT, recency=not args.no_recency, args=args)
        top = tops[question.qid]
        top["hybrid/similarity"] = asked.hits[0].similarity if asked.hits else -math.inf
        top["hybrid/score"] = asked.hits[0].score if asked.hits else -math.inf
        dense = sorted(
            (c for c in asked.candidates if c.vector_rank is not None),
            key=lambda c: c.vector_rank or 0,
        )
        top["vector/similarity"] = (dense[0].similarity or 0.0) if dense else -math.inf
        if not question.answerable:
            continue
        _timed(run, "turn", asked)
        rows = asked.rows
        for row in rows:
            run.stats.served += 1
            if row.observed_at_text != version_turn[row.version_id].observed_at:
                run.stats.served_without_date += 1
        run.tally["turn"].add(question.category, score(items_of(rows), question.gold))
        if args.dump is not None:
            _dump(args.dump, run.dataset, tag, question, asked, turns_of, version_turn)
        vector_items = [frozenset(turns_of[c.version_id]) for c in dense[:LIMIT]]
        run.tally["turn/vector"].add(question.category, score(vector_items, question.gold))
        # The pool: what reaches the reranker at each size (the fused order above the floor),
        # what the dense stage alone reaches, and the fused order with each candidate's
        # neighbours in write order (the turn before and after it) placed after it.
        above = [c for c in asked.candidates if not c.below_floor]
        fused = [c.version_id for c in above]
        pools = {
            "pool/fused": fused,
            "pool/fused-norecency": [c.version_id for c in sorted(above, key=lambda c: -c.fused)],
            "pool/rrf60": [c.version_id for c in sorted(above, key=rrf60)],
            "pool/vector": [c.version_id for c in dense],
            "pool/fused+neighbours": with_neighbours(fused, neighbours_of),
        }
        for key, versions in pools.items():
            items = [frozenset(turns_of[v]) for v in versions]
            run.tally[key].add(question.category, reach(items, question.gold))
        if question.newer_older is not None:
            old_turns = {t for t in question.gold if session_of[t] == question.newer_older[1]}
            served_turns = {t for row in rows for t in turns_of[row.version_id]}
            run.stats.ku_old_served_live += bool(old_turns & served_turns)
        if run.dataset == "longmemeval":
            rows = _search(core, question.text, tag, SESSION_LIMIT, args)
            ranked = sessions_ranked((turns_of[row.version_id] for row in rows), session_of)
            _session_figures(run, "session", question, ranked)
    run.query_s += time.perf_counter() - started
    # The same hybrid recall with recency off.
    for question in answerable:
        asked = _ask(runtime, question.text, tag, LIMIT, recency=False, args=args)
        run.tally["turn/no-recency"].add(
            question.category, score(items_of(asked.rows), question.gold)
        )
    # Unanswerable questions are reranked at one pool only, the abstention figure's: the
    # product's pool when it is among those asked.
    abstain_pool = (
        RERANK_POOL if RERANK_POOL in args.rerank_pools else next(iter(args.rerank_pools), None)
    )
    for pool in args.rerank_pools:
        for question in haystack.questions:
            if not question.answerable and pool != abstain_pool:
                continue
            asked = _ask(
                runtime,
                question.text,
                tag,
                LIMIT,
                recency=not args.no_recency,
                args=args,
                rerank_pool=pool,
            )
            if pool == abstain_pool:
                top = tops[question.qid]
                first = asked.hits[0] if asked.hits else None
                logit = None if first is None else first.rerank_score
                top["rerank/rerank_score"] = -math.inf if logit is None else logit
                top["rerank/score"] = -math.inf if first is None else first.score
            if not question.answerable:
                continue
            run.tally[f"turn/rerank{pool}"].add(
                question.category, score(items_of(asked.rows), question.gold)
            )
            run.rerank_s.setdefault(pool, []).append(asked.seconds)
            _timed(run, f"turn/rerank{pool}", asked)

    # BM25 alone, the recipe's lexical baseline: every turn a document of its own (what a
    # store without dedup or supersession would hold), ranked by tantivy's BM25 with its
    # default tokenizer (lowercased words, no stemming): plain BM25, as a store without
    # mnemolog's analysis would rank them.
    started = time.perf_counter()
    turns = [turn for session in haystack.sessions for turn in session]
    baseline = PlainBM25([turn.text for turn in turns])
    # The strongest simple lexical line beside it: the same BM25 with English stop words and
    # Snowball stemming (the analysis of mnemolog's own full-text index).
    stemmed = PlainBM25([turn.text for turn in turns], analysed=True)
    for question in haystack.questions:
        plain_hits = baseline.search_scored(question.text, BM25_DEPTH)
        stem_hits = stemmed.search_scored(question.text, max(POOL_KS))
        top = tops[question.qid]
        top["bm25/score"] = plain_hits[0][1] if plain_hits else -math.inf
        top["bm25-stemmed/score"] = stem_hits[0][1] if stem_hits else -math.inf
        if not question.answerable:
            continue
        found = [turns[n].turn_id for n, _ in plain_hits]
        run.tally["turn/bm25"].add(
            question.category, score([frozenset([t]) for t in found[:LIMIT]], question.gold)
        )
        stems = [turns[n].turn_id for n, _ in stem_hits]
        run.tally["pool/bm25-stemmed"].add(
            question.category, reach([frozenset([t]) for t in stems], question.gold)
        )
        stems = stems[:LIMIT]
        run.tally["turn/bm25-stemmed"].add(
            question.category, score([frozenset([t]) for t in stems], question.gold)
        )
        if run.dataset == "longmemeval":
            ranked = sessions_ranked(([t] for t in found), session_of)
            _session_figures(run, "session/bm25", question, ranked)
    run.baseline_s += time.perf_counter() - started
    for question in haystack.questions:
        run.abstention.append((question.answerable, tops[question.qid]))


class PlainBM25:
    """tantivy BM25 (k1 = 1.2, b = 0.75) over ``texts`` in memory, with tantivy's default
    tokenizer, or with ``analysed`` English stop words and Snowball stemming; a query is the
    OR of its terms."""

    def __init__(self, texts: Sequence[str], *, analysed: bool = False) -> None:
        builder = tantivy.SchemaBuilder()
        builder.add_integer_field("n", stored=True, indexed=True, fast=True)
        builder.add_text_field("text", tokenizer_name=TOKENIZER if analysed else "default")
        self._schema = builder.build()
        self._index = tantivy.Index(self._schema)
        if analysed:
            self._index.register_tokenizer(TOKENIZER, ANALYZER)
        writer = self._index.writer(heap_size=15_000_000, num_threads=1)
        for n, text in enumerate(texts):
            writer.add_document(tantivy.Document(n=n, text=text))
        writer.commit()
        writer.wait_merging_threads()
        self._index.reload()
        self._analyzer = (
            ANALYZER
            if analysed
            else tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.remove_long(40))
            .filter(tantivy.Filter.lowercase())
            .build()
        )

    def search(self, query: str, k: int) -> list[int]:
        """The numbers of the ``k`` best texts, best first."""
        return [n for n, _ in self.search_scored(query, k)]

    def search_scored(self, query: str, k: int) -> list[tuple[int, float]]:
        """The numbers of the ``k`` best texts with their BM25 scores, best first."""
        terms = list(dict.fromkeys(self._analyzer.analyze(query)))
        searcher = self._index.searcher()
        if not terms or searcher.num_docs == 0:
            return []
        matches = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "text", term))
                for term in terms
            ]
        )
        hits = searcher.search(matches, min(k, searcher.num_docs)).hits
        found = searcher.fast_field_values("n", [address for _, address in hits])
        return [
            (int(n), float(bm25))
            for n, (bm25, _) in zip(found, hits, strict=True)
            if isinstance(n, int)
        ]


def _search(core: Core, q: str, tag: str, limit: int, args: argparse.Namespace) -> list[VersionRow]:
    """The memory versions recall serves, in order."""
    request = RecallRequest(
        q=q,
        container_tag=tag,
        limit=limit,
        recency=not args.no_recency,
        diversify=False if args.no_diversify else None,
    )
    hits = core.recall.search(request, origin="rest", actor=ACTOR).hits
    return [hit.row for hit in hits if hit.row is not None]


def _dump(
    out: Any,
    dataset: str,
    tag: str,
    question: Question,
    asked: Asked,
    turns_of: dict[str, dict[str, None]],
    version_turn: dict[str, Turn],
) -> None:
    """One JSON line of what a question was served and from which candidates (``--dump``):
    the head of the fused list with its texts and dates, so that an ordering rule can be
    tried again offline on exactly these candidates."""
    head = sorted(asked.candidates, key=lambda c: -c.score)[:DUMP_HEAD]
    wanted = {c.version_id for c in head} | {row.version_id for row in asked.rows}
    record = {
        "dataset": dataset,
        "tag": tag,
        "qid": question.qid,
        "category": question.category,
        "question": question.text,
        "gold": sorted(question.gold),
        "newer_older": question.newer_older,
        "served": [row.version_id for row in asked.rows],
        "candidates": [
            {
                "v": c.version_id,
                "vector_rank": c.vector_rank,
                "bm25_rank": c.bm25_rank,
                "similarity": c.similarity,
                "score": c.score,
                "below_floor": c.below_floor,
            }
            for c in head
        ],
        "versions": {
            v: {
                "text": version_turn[v].text,
                "observed_at": version_turn[v].observed_at,
                "session": version_turn[v].session,
                "turns": sorted(turns_of[v]),
            }
            for v in wanted
            if v in version_turn
        },
    }
    out.write(json.dumps(record) + "\n")


DUMP_HEAD = 20  # the candidates of the fused head a dump keeps, by score


@dataclass
class Asked:
    """One recall as the product answered it: the served hits, the versions they are, the
    candidates of its trace and the seconds it took."""

    hits: list[Hit]
    rows: list[VersionRow]
    candidates: list[Candidate]
    seconds: float
    stages: dict[str, float]  # the trace's per-stage latency, ms


def _ask(
    runtime: Runtime,
    q: str,
    tag: str,
    limit: int,
    *,
    recency: bool,
    args: argparse.Namespace,
    rerank_pool: int | None = None,
) -> Asked:
    """``Recall.search`` with the product's defaults but for ``recency`` (and ``rerank`` on
    with ``rerank_pool``); the candidates are read back from the recall's own trace event."""
    request = RecallRequest(
        q=q,
        container_tag=tag,
        limit=limit,
        recency=recency,
        diversify=False if args.no_diversify else None,
        rerank=rerank_pool is not None,
        rerank_pool=rerank_pool,
    )
    started = time.perf_counter()
    result = runtime.core.recall.search(request, origin="rest", actor=ACTOR)
    seconds = time.perf_counter() - started
    candidates: list[Candidate] = []
    stages: dict[str, float] = {}
    if result.seq is not None:
        for stored in runtime.log.read(from_seq=result.seq, limit=1):
            event = stored.record.event
            if isinstance(event, RecallPerformed) and event.recall_id == result.trace_id:
                candidates = list(event.candidates)
                stages = dict(event.latency_ms)
    hits = result.hits
    rows = [h.row for h in hits if h.row is not None]
    return Asked(hits, rows, candidates, seconds, stages | {"total": seconds * 1000})


def _timed(run: Run, line: str, asked: Asked) -> None:
    for stage, ms in asked.stages.items():
        run.stage_ms[line][stage].append(ms)


def _session_figures(run: Run, level: str, question: Question, ranked: list[str]) -> None:
    items = [frozenset([s]) for s in ranked]
    run.tally[level].add(question.category, score(items, question.gold_sessions))
    if question.newer_older is not None:
        run.tally[f"{level}/ku"].add(question.category, ordering(ranked, *question.newer_older))


# --- report -----------------------------------------------------------------------------------


def report(runs: list[Run], args: argparse.Namespace, total_s: float) -> dict[str, Any]:
    out: dict[str, Any] = {
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}",
        "code": args.revision,
        "tier": args.tier,
        "store": args.store,
        "supersede_threshold": args.supersede_threshold,
        "recency": not args.no_recency,
        "diversify": "off" if args.no_diversify else "default",
        "limit": LIMIT,
        "session_limit": SESSION_LIMIT,
        "datasets": {},
        "goals": [],
        "total_s": total_s,
        "load_average": {"start": args.load_at_start, "end": os.getloadavg()[0]},
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    for run in runs:
        order = list(LOCOMO_CATEGORIES.values()) if run.dataset == "locomo" else list(LME_TYPES)
        levels = {level: tally.table(order) for level, tally in run.tally.items()}
        stats = run.stats
        out["datasets"][run.dataset] = {
            "containers": run.containers,
            "levels": levels,
            "store": {
                "turns": stats.turns,
                "created": stats.statuses["created"],
                "superseded": stats.statuses["superseded"],
                "deduplicated": stats.statuses["deduplicated"],
                "superseded_by_reason": dict(stats.supersede_reasons),
                "linked_by_reason": dict(stats.link_reasons),
                "superseded_across_speakers": stats.cross_speaker_supersedes,
                "gold_turns": stats.gold_turns,
                "gold_turns_absorbed": stats.gold_absorbed,
                "served": stats.served,
                "served_without_session_date": stats.served_without_date,
                "ku_pairs_sharing_a_chain": stats.ku_shared_chain,
                "ku_old_value_served_unflagged@10": stats.ku_old_served_live,
            },
            "timing_s": {
                "open": run.open_s,
                "ingest": run.ingest_s,
                "recall": run.query_s,
                "bm25_baseline": run.baseline_s,
            },
            "rerank_search_ms": {
                pool: latency_summary(samples) for pool, samples in run.rerank_s.items()
            },
            "baselines": baselines(levels, list(run.rerank_s)),
            "stage_ms": {
                line: {stage: percentiles(samples) for stage, samples in stages.items()}
                for line, stages in run.stage_ms.items()
            },
            "abstention": abstention(run.abstention),
        }
        _goals(out, run, out["datasets"][run.dataset])
    return out


def baselines(levels: dict[str, dict[str, dict[str, float]]], pools: list[int]) -> dict[str, Any]:
    """Every line on the same questions (ALL), with its margins against the strongest BM25
    line (the one with the higher recall_all@5)."""
    keys = [(key, label) for key, label in LINES if key in levels]
    keys += [(f"turn/rerank{p}", f"hybrid + rerank (pool {p})") for p in pools]
    strongest = max(
        (key for key in BM25_LINES if key in levels),
        key=lambda key: levels[key][ALL]["recall_all@5"],
    )
    base = levels[strongest][ALL]
    lines = []
    for key, label in keys:
        row = levels[key][ALL]
        lines.append(
            {
                "line": key,
                "label": label,
                "n": int(row["n"]),
                **{m: row[m] for m in ("recall_all@5", "ndcg@10", "hit@1", "recall_all@10")},
                "margin_recall_all@5": row["recall_all@5"] - base["recall_all@5"],
                "margin_ndcg@10": row["ndcg@10"] - base["ndcg@10"],
            }
        )
    return {"strongest_bm25": strongest, "lines": lines}


def percentiles(samples: Sequence[float]) -> dict[str, float]:
    """p50 and p95 of ``samples`` (nearest rank)."""
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))]

    return {"p50": at(0.50), "p95": at(0.95), "n": len(ordered)}


def auroc(positives: Sequence[float], negatives: Sequence[float]) -> float | None:
    """The probability that a positive scores above a negative (ties count a half): the
    Mann-Whitney form of the area under the ROC curve. None without both kinds."""
    if not positives or not negatives:
        return None
    ordered = sorted([(v, True) for v in positives] + [(v, False) for v in negatives])
    rank_sum = 0.0
    i = 0
    while i < len(ordered):
        j = i
        while j < len(ordered) and ordered[j][0] == ordered[i][0]:
            j += 1
        mean_rank = (i + 1 + j) / 2  # ranks i+1 .. j share their mean
        rank_sum += mean_rank * sum(1 for _, positive in ordered[i:j] if positive)
        i = j
    n_pos, n_neg = len(positives), len(negatives)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def abstention(asked: list[tuple[bool, dict[str, float]]]) -> dict[str, Any]:
    """AUROC of each top score, answerable questions against unanswerable ones."""
    figures: dict[str, float | None] = {}
    for key, _ in TOP_SCORES:
        if not asked or any(key not in top for _, top in asked):
            continue
        figures[key] = auroc(
            [top[key] for answerable, top in asked if answerable],
            [top[key] for answerable, top in asked if not answerable],
        )
    return {
        "answerable": sum(1 for answerable, _ in asked if answerable),
        "unanswerable": sum(1 for answerable, _ in asked if not answerable),
        "auroc": figures,
    }


def _goals(out: dict[str, Any], run: Run, figures: dict[str, Any]) -> None:
    label = "LoCoMo" if run.dataset == "locomo" else "LongMemEval_S"
    levels = figures["levels"]
    table = figures["baselines"]
    strongest = dict(LINES)[table["strongest_bm25"]]
    lines = {line["line"]: line for line in table["lines"]}
    base = levels[table["strongest_bm25"]][ALL]["recall_all@5"]
    wanted = [("turn", "hybrid (default)", GOAL_MARGIN)]
    if run.rerank_s:
        pool = RERANK_POOL if RERANK_POOL in run.rerank_s else next(iter(run.rerank_s))
        wanted.append((f"turn/rerank{pool}", f"hybrid + rerank (pool {pool})", GOAL_RERANK_MARGIN))
    for key, name, margin in wanted:
        value = lines[key]["recall_all@5"]
        out["goals"].append(
            {
                "goal": f"{label} turn-level recall_all@5 of {name} >= strongest BM25 + "
                f"{margin:.2f}",
                "value": value,
                "baseline": base,
                "baseline_label": strongest,
                "met": value >= base + margin,
            }
        )
    if "session/ku" in levels:
        ordered, lexical = levels["session/ku"][ALL], levels["session/bm25/ku"][ALL]
        out["goals"].append(
            {
                "goal": f"{label} knowledge-update newer_above_older >= {GOAL_ORDERING:.2f}"
                f" (n={ordered['n']:.0f})",
                "value": ordered["newer_above_older"],
                "baseline": lexical["newer_above_older"],
                "baseline_label": "plain BM25",
                "met": ordered["newer_above_older"] >= GOAL_ORDERING,
            }
        )
    found = figures["abstention"]
    for key in ("hybrid/score", "hybrid/similarity", "rerank/rerank_score"):
        value = found["auroc"].get(key)
        if value is None:
            continue
        out["goals"].append(
            {
                "goal": f"{label} abstention AUROC of the {dict(TOP_SCORES)[key]} >= "
                f"{GOAL_AUROC:.2f} ({found['answerable']} answerable, "
                f"{found['unanswerable']} unanswerable)",
                "value": value,
                "baseline": found["auroc"].get("bm25-stemmed/score"),
                "baseline_label": "BM25, stop words + stemming",
                "met": value >= GOAL_AUROC,
            }
        )


def print_pool(levels: dict[str, dict[str, dict[str, float]]]) -> None:
    """recall_all at each pool depth: how much of the gold a reranker of that pool could see."""
    shown = [(key, label) for key, label in POOL_LINES if key in levels]
    if not shown:
        return
    print()
    print("the pool: recall_all (recall) within the first k")
    print(f"  {'':42}" + "".join(f"{'k=' + str(k):>15}" for k in POOL_KS))
    for key, label in shown:
        row = levels[key][ALL]
        cells = "".join(
            f"{row[f'recall_all@{k}']:>7.3f} ({row[f'recall@{k}']:.3f})" for k in POOL_KS
        )
        print(f"  {label:42}{cells}")


def print_report(out: dict[str, Any]) -> None:
    print(f"mnemolog {out['code']} on {out['machine']}")
    print(
        f"embedder tier: {out['tier']}; supersede threshold: {out['supersede_threshold']}; "
        f"recency: {out['recency']}; diversify: {out['diversify']}; limit {out['limit']} "
        f"(sessions: {out['session_limit']}); store: {out['store']}"
    )
    for dataset, figures in out["datasets"].items():
        levels = figures["levels"]
        for level in ("turn", "session"):
            if level not in levels:
                continue
            print()
            title = "LoCoMo dev" if dataset == "locomo" else "LongMemEval_S dev (user turns)"
            print(
                f"{title}, {level} level, {figures['containers']} containers: mnemolog | BM25-only"
            )
            _table(levels[level], levels[f"{level}/bm25"])
            if level == "turn":
                print()
                print_baselines(title, figures["baselines"])
                print_pool(levels)
                _rerank_lines(figures["rerank_search_ms"])
                print()
                print_abstention(figures["abstention"])
        if "session/ku" in levels:
            ku, base = levels["session/ku"][ALL], levels["session/bm25/ku"][ALL]
            print()
            print(
                f"knowledge-update ordering over ranked sessions (n={ku['n']}): "
                "mnemolog | BM25-only"
            )
            for name in ("newer_above_older", "newer@1", "both@5", "stale_only@5"):
                print(f"  {name:18} {ku[name]:.2f} | {base[name]:.2f}")
        store, timing = figures["store"], figures["timing_s"]
        print()
        print(
            f"store: {store['turns']} turns -> {store['created']} created, "
            f"{store['superseded']} superseded, {store['deduplicated']} deduplicated; "
            f"{store['gold_turns_absorbed']} of {store['gold_turns']} gold turns are not a "
            "live version of their own (never credited)"
        )
        print(
            f"superseded by rule: {store['superseded_by_reason'] or 'none'}; linked by rule: "
            f"{store['linked_by_reason'] or 'none'}; superseded across speakers: "
            f"{store['superseded_across_speakers']}"
        )
        print(
            f"served items without their session date: {store['served_without_session_date']}"
            f" of {store['served']}"
        )
        if dataset == "longmemeval":
            print(
                f"knowledge-update pairs sharing a chain: {store['ku_pairs_sharing_a_chain']};"
                " old value served as a live, unflagged memory in the top 10: "
                f"{store['ku_old_value_served_unflagged@10']}"
            )
        print(
            f"time: open {timing['open']:.0f} s, ingest {timing['ingest']:.0f} s "
            f"({store['turns'] / max(timing['ingest'], 1e-9):.0f} turns/s), recall "
            f"{timing['recall']:.0f} s, BM25 baseline {timing['bm25_baseline']:.0f} s"
        )
    print()
    print("goals:")
    for goal in out["goals"]:
        verdict = "met" if goal["met"] else "NOT met"
        base = goal["baseline"]
        beside = "" if base is None else f" ({goal['baseline_label']} {base:.3f})"
        print(f"  {goal['goal']}: {goal['value']:.3f}{beside} -> {verdict}")
    load = out["load_average"]
    print(
        f"total {out['total_s']:.0f} s; peak memory {out['peak_rss_mib']:.0f} MiB; load average"
        f" {load['start']:.1f} at the start, {load['end']:.1f} at the end (another busy process"
        " slows every figure of time)"
    )


def print_baselines(title: str, table: dict[str, Any]) -> None:
    """One line per configuration, ALL questions, margins against the strongest BM25."""
    lines = table["lines"]
    strongest = dict(LINES)[table["strongest_bm25"]]
    print(
        f"{title}, turn level, every line on the same turns and {lines[0]['n']} questions;"
        f" margins against the strongest BM25 line ({strongest}):"
    )
    head = ("recall_all@5", "NDCG@10", "hit@1", "recall_all@10", "margin r_all@5", "margin NDCG")
    print(f"  {'line':30}" + "".join(f"{h:>15}" for h in head))
    for line in lines:
        cells = [line[m] for m in ("recall_all@5", "ndcg@10", "hit@1", "recall_all@10")]
        print(
            f"  {line['label']:30}"
            + "".join(f"{v:>15.3f}" for v in cells)
            + f"{line['margin_recall_all@5']:>+15.3f}{line['margin_ndcg@10']:>+15.3f}"
        )


def print_abstention(found: dict[str, Any]) -> None:
    print(
        f"abstention: AUROC of the top score, {found['answerable']} answerable against "
        f"{found['unanswerable']} unanswerable questions (goal >= {GOAL_AUROC:.2f}):"
    )
    for key, label in TOP_SCORES:
        if key not in found["auroc"]:
            continue
        value = found["auroc"][key]
        if value is None:
            print(f"  {label:48} n/a (needs both kinds of question)")
            continue
        verdict = "met" if value >= GOAL_AUROC else "not met"
        print(f"  {label:48} {value:.3f} ({verdict})")


def _rerank_lines(timing: dict[int, dict[str, float | None]]) -> None:
    """The cost of a reranked search in this process, per pool."""
    for pool, cost in timing.items():
        print(
            f"  hybrid + rerank (pool {pool}): search p50 {cost['p50_ms']:.0f} ms,"
            f" p95 {cost['p95_ms']:.0f} ms in this process"
        )


def _table(ours: dict[str, dict[str, float]], base: dict[str, dict[str, float]]) -> None:
    metrics = [f"hit@{k}" for k in (1, 5, 10)] + [f"recall_all@{k}" for k in KS]
    metrics += [f"ndcg@{k}" for k in (5, 10)]
    print(f"  {'category':26} {'n':>4} " + " ".join(f"{m:>13}" for m in metrics))
    for category, row in ours.items():
        cells = " ".join(f"{row[m]:>5.2f} | {base[category][m]:<5.2f}" for m in metrics)
        print(f"  {category:26} {int(row['n']):>4} {cells}")


def _revision() -> str:
    """The commit measured, marked when ``src/`` differs from it."""
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "src"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "(unknown revision)"
    return f"{head} (src/ modified)" if dirty else head


# --- main -------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", choices=("quality", "fast"), default="quality")
    parser.add_argument("--dataset", choices=("both", "locomo", "longmemeval"), default="both")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the bench-data folder")
    parser.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    parser.add_argument(
        "--limit-questions",
        type=int,
        default=None,
        metavar="N",
        help="LongMemEval: the first N answerable questions and the first N _abs ones",
    )
    parser.add_argument(
        "--questions-per-conversation",
        type=int,
        default=None,
        metavar="N",
        help="LoCoMo: the first N answerable questions of each conversation and N of category 5",
    )
    parser.add_argument("--supersede-threshold", type=float, default=Settings().supersede_threshold)
    parser.add_argument("--model-cache-dir", type=Path, default=None)
    parser.add_argument("--no-recency", action="store_true", help="recall without recency")
    parser.add_argument("--no-diversify", action="store_true", help="recall without MMR")
    parser.add_argument(
        "--store",
        choices=("per-haystack", "shared"),
        default="per-haystack",
        help="a data dir per conversation or question (default), or one for all of them",
    )
    parser.add_argument("--dir", type=Path, default=None, help="where the temporary dirs go")
    parser.add_argument(
        "--rerank", action="store_true", help="also ask each question with rerank on"
    )
    parser.add_argument(
        "--rerank-pool",
        default=str(RERANK_POOL),
        metavar="N[,N...]",
        help="with --rerank: the pool sizes to rerank (each adds a line)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--configurations",
        action="store_true",
        help="every tier and agent/REST rerank pool, each tier in a child run, as one table",
    )
    parser.add_argument(
        "--configuration-questions",
        type=int,
        default=100,
        metavar="N",
        help="with --configurations: LongMemEval questions per tier unless --limit-questions",
    )
    parser.add_argument(
        "--configuration-tiers",
        default="fast,quality",
        metavar="TIERS",
        help="with --configurations: the embedder tiers to run (default fast,quality)",
    )
    parser.add_argument(
        "--write",
        type=Path,
        default=None,
        metavar="PAGE",
        help="with --configurations: put the tables into PAGE (docs/benchmarks.md)",
    )
    parser.add_argument(
        "--reports",
        type=Path,
        default=None,
        metavar="FILE",
        help="with --configurations: keep the runs' reports in FILE; if it exists, only "
        "write them up",
    )
    parser.add_argument(
        "--dump",
        type=argparse.FileType("w"),
        default=None,
        metavar="FILE",
        help="write each question's served list and fused head (texts, dates) as JSON lines",
    )
    args = parser.parse_args()
    args.rerank_pools = [int(n) for n in args.rerank_pool.split(",")] if args.rerank else []
    if not (args.data / "RECIPE.md").is_file():
        parser.error(f"no bench data at {args.data} (use --data)")
    if args.configurations:
        import retrieval_table  # it imports this module: only here, once this one is loaded

        return retrieval_table.run(args)

    # A stop by SIGTERM unwinds like Ctrl-C, so the temporary data dirs are removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    args.load_at_start = os.getloadavg()[0]
    args.revision = _revision()  # now: the modules are imported, edits from here on do not count
    started = time.perf_counter()
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="mnemolog-bench-retrieval-", dir=args.dir) as tmp:
        for dataset in ("locomo", "longmemeval"):
            if args.dataset not in ("both", dataset):
                continue
            if dataset == "locomo":
                haystacks = load_locomo(
                    args.data, args.limit_conversations, args.questions_per_conversation
                )
            else:
                haystacks = load_longmemeval(args.data, args.limit_questions)
            runs.append(run_dataset(dataset, haystacks, args, Path(tmp)))
            del haystacks
    out = report(runs, args, time.perf_counter() - started)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print_report(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
