"""How far recall's bundled models can go on the goals it misses: reranked LongMemEval_S,
knowledge-update ordering and abstention, with ranking variants replayed on recorded pools.

One pass through the product, then variants ranked offline on what it recorded:

1. Every LoCoMo conversation or LongMemEval question is written into a fresh data dir as
   ``retrieval.py`` writes it (one memory per turn, one batch per session), and each question is
   asked once through ``Recall.search`` with ``rerank`` on over a pool of ``--pool`` (100).
   The recall's own trace holds every candidate with both ranks, its fused score and, for the
   pool, the cross-encoder's logit. A logit depends on its pair only (``CrossEncoder``), and the
   fused order does not depend on the rerank, so any smaller pool, and no rerank at all, can be
   ranked again from this one search.
2. On those candidates, with the product's own ranking functions (``memory.ranking``):
   - **pool size**: recall_all@5 with the cross-encoder over the first 10 to ``--pool``
     fused candidates, beside the first stage's own recall_all@k (what any reranker of that
     pool could reach at best);
   - **the cross-encoder mixed with the first stage**: its rank fused with the fused rank by
     RRF, or its logit minus a multiple of the log of the fused rank;
   - **newer above older**: the reach of ``newer_above_older_among_agreed`` (how deep both
     lists must agree, ``AGREED_RANKS``) and its gap (``UPDATE_GAP_NS``), with and without
     rerank: LongMemEval's knowledge-update ordering against recall_all@5 and hit@1 of every
     question;
   - **abstention**: the AUROC, answerable against unanswerable questions (LoCoMo category 5,
     LongMemEval's ``_abs``), of signals a search could return beside its hits: the top
     logit, how much of the query's words (IDF-weighted) the best of the top three hits holds,
     how much of them any memory of the container holds, how many of the query's names
     (capitalised words) the top hit holds, and the mean of their ranks.

MMR is left out of the replayed orders: over a reranked head it moved recall_all@5 by 0.003
here. The replayed product line (pool 30, agreed top 5, one day) is printed beside the order the
product served, as a check of the replay. Nothing is asserted.

    .venv/bin/python bench/headroom.py [--tier fast|quality] [--dataset longmemeval|locomo]
        [--pool 100] [--limit N] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import retrieval
from retrieval import ACTOR, Haystack, Question, auroc

from mnemolog.embedding import rerank as rerank_module
from mnemolog.eventlog.events import Candidate, RecallPerformed
from mnemolog.memory import RecallRequest
from mnemolog.memory.recall import ranking as rules
from mnemolog.projections.fulltext.analysis import ANALYZER, query_terms
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

LIMIT = 10  # what the product serves by default
SESSIONS_FROM = 30  # memories a session ranking is read from, as in retrieval.py
PRODUCT_POOL = rules.RERANK_POOL
POOLS = (10, 20, 30, 50, 100)
CEILINGS = (5, 10, 30, 50, 100)
# (AGREED_RANKS, UPDATE_GAP in hours) of newer-above-older; the first is the product's.
REACHES = ((rules.AGREED_RANKS, rules.UPDATE_GAP_NS / 3.6e12), (5, 1.0), (7, 24.0), (10, 24.0))
# A capitalised word that does not open a sentence: a name, in a question.
_NAME = re.compile(r"(?<![.?!]\s)(?<!^)\b([A-Z][\w\-]+)")


@dataclass
class Pooled:
    """One question as the product ranked it, with what the replay needs."""

    question: Question
    candidates: list[Candidate]  # the trace's, in fused order, the floored ones left out
    served: list[str]  # the version ids the product served (reranked at --pool)
    turns_of: dict[str, frozenset[str]]  # version id -> the turns whose text it holds
    session_of: dict[str, str]
    observed: dict[str, int]  # version id -> observed_at, UTC ns
    terms: dict[str, frozenset[str]]  # version id -> its content's analysed terms
    texts: dict[str, str]  # version id -> its content
    document_frequency: Counter[str]
    memories: int


@dataclass
class Gathered:
    pooled: list[Pooled] = field(default_factory=list)
    seconds: float = 0.0


def gather(haystacks: list[Haystack], tier: str, pool: int, scratch: Path) -> Gathered:
    out = Gathered()
    started = time.perf_counter()
    for number, haystack in enumerate(haystacks, start=1):
        settings = Settings(data_dir=scratch / haystack.tag, embedder=tier, log_map_size=256 << 20)
        runtime = Runtime(settings)
        try:
            out.pooled.extend(_one(runtime, haystack, pool))
        finally:
            runtime.close()
            shutil.rmtree(scratch / haystack.tag)
        print(f"\r{number}/{len(haystacks)} stores", end="", file=sys.stderr)
    print(file=sys.stderr)
    out.seconds = time.perf_counter() - started
    return out


def _one(runtime: Runtime, haystack: Haystack, pool: int) -> list[Pooled]:
    turns_of: dict[str, set[str]] = defaultdict(set)
    session_of: dict[str, str] = {}
    observed: dict[str, int] = {}
    terms: dict[str, frozenset[str]] = {}
    texts: dict[str, str] = {}
    for turn, outcome in retrieval.write_turns(runtime.core, haystack):
        turns_of[outcome.version_id].add(turn.turn_id)
        session_of[turn.turn_id] = turn.session
        if outcome.status != "deduplicated":
            observed[outcome.version_id] = _ns(turn.observed_at)
            terms[outcome.version_id] = frozenset(ANALYZER.analyze(turn.text))
            texts[outcome.version_id] = turn.text
    frequency: Counter[str] = Counter()
    for found in terms.values():
        frequency.update(found)
    frozen = {v: frozenset(t) for v, t in turns_of.items()}
    out = []
    for question in haystack.questions:
        request = RecallRequest(
            q=question.text,
            container_tag=haystack.tag,
            limit=SESSIONS_FROM,
            rerank=True,
            rerank_pool=pool,
        )
        result = runtime.core.recall.search(request, origin="rest", actor=ACTOR)
        candidates: list[Candidate] = []
        for stored in runtime.log.read(from_seq=result.seq or 0, limit=1):
            event = stored.record.event
            if isinstance(event, RecallPerformed) and event.recall_id == result.trace_id:
                candidates = [c for c in event.candidates if not c.below_floor]
        candidates.sort(key=lambda c: -c.score)
        served = [hit.row.version_id for hit in result.hits if hit.row is not None]
        out.append(
            Pooled(
                question,
                candidates,
                served,
                frozen,
                session_of,
                observed,
                terms,
                texts,
                frequency,
                len(terms),
            )
        )
    return out


def _ns(iso: str) -> int:
    return int(datetime.fromisoformat(iso).timestamp()) * 1_000_000_000


# --- replayed orders ---------------------------------------------------------------------------


Mix = Callable[[Candidate, int, int], float]  # candidate, its logit rank, its fused rank


def replayed(
    p: Pooled,
    pool: int,
    *,
    mix: Mix | None = None,
    agreed_ranks: int = rules.AGREED_RANKS,
    gap_ns: int = rules.UPDATE_GAP_NS,
) -> list[str]:
    """The version ids in the order the product's rules give with a rerank over ``pool`` (0:
    none), the head ordered by ``mix`` instead of the logit when given, then newer above older
    among the candidates both lists rank in their first ``agreed_ranks``."""
    head = p.candidates[:pool]
    by_logit = sorted(head, key=lambda c: -(c.rerank_score or 0.0))
    if mix is not None:
        logit_rank = {c.version_id: i for i, c in enumerate(by_logit, start=1)}
        fused_rank = {c.version_id: i for i, c in enumerate(head, start=1)}
        by_logit = sorted(
            head, key=lambda c: -mix(c, logit_rank[c.version_id], fused_rank[c.version_id])
        )
    order = [c.version_id for c in by_logit + p.candidates[pool:]]
    agreed = {
        c.version_id
        for c in p.candidates
        if c.vector_rank is not None
        and c.vector_rank <= agreed_ranks
        and c.bm25_rank is not None
        and c.bm25_rank <= agreed_ranks
    }
    saved = rules.UPDATE_GAP_NS
    rules.UPDATE_GAP_NS = gap_ns  # read by the rule at call time
    try:
        return rules.newer_above_older_among_agreed(order, agreed, p.observed)
    finally:
        rules.UPDATE_GAP_NS = saved


def figures(p: Pooled, order: Sequence[str]) -> dict[str, float]:
    items = [p.turns_of[v] for v in order[:LIMIT]]
    scored = retrieval.score(items, p.question.gold)
    out = {"recall_all@5": scored["recall_all@5"], "hit@1": scored["hit@1"]}
    if p.question.newer_older is not None:
        sessions = retrieval.sessions_ranked(
            (p.turns_of[v] for v in order[:SESSIONS_FROM]), p.session_of
        )
        out["newer_above_older"] = retrieval.ordering(sessions, *p.question.newer_older)[
            "newer_above_older"
        ]
    return out


def mean_of(rows: list[dict[str, float]]) -> dict[str, float]:
    keys = {k for row in rows for k in row}
    return {k: sum(r[k] for r in rows if k in r) / sum(1 for r in rows if k in r) for k in keys}


def ceiling(p: Pooled, k: int) -> float:
    """recall_all@k of the fused order: what a reranker of its first k could reach at best."""
    found = set().union(*(p.turns_of[c.version_id] for c in p.candidates[:k]))
    return float(p.question.gold <= found)


# --- the cross-encoder reading otherwise --------------------------------------------------------

# A sentence ends at . ! or ? before a space, or at a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
WINDOW_TOKENS = 64  # a window of whole sentences, at most this many tokens when it has two
WHOLE_TOKENS = 512  # the model's own limit


def rescored(pooled: list[Pooled], model_cache: Path, how: str) -> dict[int, dict[str, float]]:
    """New logits for the product's pool of every question (``PRODUCT_POOL`` candidates): the
    memories read whole (``whole``: pairs cut at 512 tokens, not 192), or each scored by its
    best window of sentences (``windows``: MaxP)."""
    saved = rerank_module.PAIR_TOKENS
    if how == "whole":
        rerank_module.PAIR_TOKENS = WHOLE_TOKENS  # read when the model loads
    try:
        model = rerank_module.CrossEncoder(rerank_module.reranker_dir(model_cache))
        model.load()
    finally:
        rerank_module.PAIR_TOKENS = saved
    out: dict[int, dict[str, float]] = {}
    try:
        for n, p in enumerate(pooled):
            head = [c.version_id for c in p.candidates[:PRODUCT_POOL]]
            if how == "whole":
                logits = model.score(p.question.text, [p.texts[v] for v in head])
                out[n] = dict(zip(head, logits, strict=True))
                continue
            owners: list[str] = []
            windows: list[str] = []
            for v in head:
                for window in sentence_windows(p.texts[v], model):
                    owners.append(v)
                    windows.append(window)
            best: dict[str, float] = {}
            for v, logit in zip(owners, model.score(p.question.text, windows), strict=True):
                best[v] = max(best.get(v, -math.inf), logit)
            out[n] = best
            print(f"\rrescored {n + 1}/{len(pooled)}", end="", file=sys.stderr)
    finally:
        model.close()
    print(file=sys.stderr)
    return out


def sentence_windows(text: str, model: rerank_module.CrossEncoder) -> list[str]:
    """``text`` as runs of whole sentences of at most ``WINDOW_TOKENS`` tokens (a longer
    sentence is a window of its own)."""
    assert model._tokenizer is not None  # loaded
    windows: list[str] = []
    run: list[str] = []
    length = 0
    for sentence in (s for s in _SENTENCE_END.split(text) if s.strip()):
        tokens = len(model._tokenizer.encode(sentence, add_special_tokens=False).ids)
        if run and length + tokens > WINDOW_TOKENS:
            windows.append(" ".join(run))
            run, length = [], 0
        run.append(sentence)
        length += tokens
    if run:
        windows.append(" ".join(run))
    return windows or [text]


# --- abstention signals ------------------------------------------------------------------------


def signals(p: Pooled, order: Sequence[str]) -> dict[str, float]:
    """Scores a search could return beside its hits, each higher for "the store knows this"."""
    words = list(dict.fromkeys(query_terms(p.question.text)))
    idf = {w: math.log((p.memories + 1) / (p.document_frequency.get(w, 0) + 0.5)) for w in words}
    total = sum(idf.values()) or 1.0
    names = {t for m in _NAME.findall(p.question.text) for t in ANALYZER.analyze(m)} & set(words)

    def covered(version_id: str) -> float:
        held = p.terms.get(version_id, frozenset())
        return sum(idf[w] for w in words if w in held) / total

    logit = {c.version_id: c.rerank_score for c in p.candidates}
    top = order[0] if order else None
    top_logit = logit.get(top) if top is not None else None
    return {
        "top logit": -math.inf if top_logit is None else top_logit,
        "query words in the best of the top 3": max((covered(v) for v in order[:3]), default=0.0),
        "query words held by some memory": sum(
            idf[w] for w in words if p.document_frequency.get(w, 0)
        )
        / total,
        "query names in the top hit": 1.0
        if not names
        else len(names & p.terms.get(top or "", frozenset())) / len(names),
    }


def rank_mean(rows: list[dict[str, float]]) -> list[float]:
    """Each question's mean over the signals of its rank among all questions (ties share)."""
    keys = list(rows[0]) if rows else []
    means = [0.0] * len(rows)
    for key in keys:
        values = sorted(r[key] for r in rows)
        first: dict[float, int] = {}
        last: dict[float, int] = {}
        for i, v in enumerate(values):
            first.setdefault(v, i)
            last[v] = i
        for i, r in enumerate(rows):
            means[i] += (first[r[key]] + last[r[key]]) / 2 / len(keys)
    return means


# --- the report --------------------------------------------------------------------------------


def report(
    gathered: Gathered, pool: int, rescores: dict[str, dict[int, dict[str, float]]]
) -> dict[str, Any]:
    pooled = gathered.pooled
    answerable = [p for p in pooled if p.question.answerable]
    out: dict[str, Any] = {"questions": len(answerable), "seconds": round(gathered.seconds, 1)}
    out["as served (rerank over the pool)"] = mean_of([figures(p, p.served) for p in answerable])
    out["pools"] = {
        size: mean_of([figures(p, replayed(p, size)) for p in answerable])
        for size in (0, *POOLS)
        if size <= pool
    }
    out["first-stage recall_all@k"] = {
        k: sum(ceiling(p, k) for p in answerable) / len(answerable) for k in CEILINGS
    }
    at = min(PRODUCT_POOL, pool)
    by_category: dict[str, list[Pooled]] = defaultdict(list)
    for p in answerable:
        by_category[p.question.category].append(p)
    out["categories"] = {
        category: {
            "n": len(ps),
            "no rerank": mean_of([figures(p, replayed(p, 0)) for p in ps])["recall_all@5"],
            f"rerank {at}": mean_of([figures(p, replayed(p, at)) for p in ps])["recall_all@5"],
            f"first stage @{at}": sum(ceiling(p, at) for p in ps) / len(ps),
        }
        for category, ps in sorted(by_category.items())
    }
    mixes: dict[str, Mix] = {
        "logit only (the product)": lambda c, a, b: c.rerank_score or 0.0,
        "RRF of both ranks, k 8, first stage 0.25": lambda c, a, b: 1 / (8 + a) + 0.25 / (8 + b),
        "RRF of both ranks, k 60, equal": lambda c, a, b: 1 / (60 + a) + 1 / (60 + b),
        "logit - 0.5 log(fused rank)": lambda c, a, b: (c.rerank_score or 0.0) - 0.5 * math.log(b),
        "logit - 2 log(fused rank)": lambda c, a, b: (c.rerank_score or 0.0) - 2 * math.log(b),
    }
    out["mixes"] = {
        name: mean_of([figures(p, replayed(p, at, mix=mix)) for p in answerable])
        for name, mix in mixes.items()
    }
    for how, logits in rescores.items():
        label = {
            "whole": "logit of the whole turn (512 tokens)",
            "windows": "logit of the best window of sentences (64 tokens)",
        }[how]
        out["mixes"][label] = mean_of(
            [
                figures(p, replayed(p, at, mix=lambda c, a, b, n=n, by=logits: by[n][c.version_id]))
                for n, p in enumerate(pooled)
                if p.question.answerable
            ]
        )
    out["reaches"] = {
        f"agreed top {ranks}, gap {hours:g} h, {'rerank ' + str(at) if size else 'no rerank'}": (
            mean_of(
                [
                    figures(p, replayed(p, size, agreed_ranks=ranks, gap_ns=int(hours * 3.6e12)))
                    for p in answerable
                ]
            )
        )
        for size in (0, at)
        for ranks, hours in REACHES
    }
    rows = [signals(p, replayed(p, at)) for p in pooled]
    if rows:
        means = rank_mean(rows)
        for row, mean in zip(rows, means, strict=True):
            row["mean rank of the four"] = mean
    labels = [p.question.answerable for p in pooled]
    out["abstention"] = {
        "answerable": sum(labels),
        "unanswerable": len(labels) - sum(labels),
        "auroc": {
            key: auroc(
                [r[key] for r, ok in zip(rows, labels, strict=True) if ok],
                [r[key] for r, ok in zip(rows, labels, strict=True) if not ok],
            )
            for key in (rows[0] if rows else {})
        },
    }
    return out


def print_report(name: str, out: dict[str, Any]) -> None:
    print(f"\n{name}: {out['questions']} answerable questions, gathered in {out['seconds']} s")

    def line(label: str, row: dict[str, float]) -> None:
        cells = "  ".join(
            f"{k} {row[k]:.3f}" for k in ("recall_all@5", "hit@1", "newer_above_older") if k in row
        )
        print(f"  {label:<52} {cells}")

    line("as served", out["as served (rerank over the pool)"])
    print(" rerank pool (0: none)")
    for size, row in out["pools"].items():
        line(f"pool {size}", row)
    print(" first stage recall_all@k (the ceiling of a rerank over k)")
    for k, value in out["first-stage recall_all@k"].items():
        print(f"  @{k:<51} {value:.3f}")
    print(" recall_all@5 per category, and the first stage's at the product's pool")
    for category, row in out["categories"].items():
        cells = "  ".join(f"{k} {v:.3f}" for k, v in row.items() if k != "n")
        print(f"  {category:<30} n={row['n']:<4}  {cells}")
    print(" the pool of 30 ordered otherwise: mixed with the first stage, or read otherwise")
    for label, row in out["mixes"].items():
        line(label, row)
    print(" newer above older: its reach")
    for label, row in out["reaches"].items():
        line(label, row)
    found = out["abstention"]
    print(
        f" abstention AUROC ({found['answerable']} answerable, "
        f"{found['unanswerable']} unanswerable)"
    )
    for label, value in found["auroc"].items():
        print(f"  {label:<52} {'n/a' if value is None else f'{value:.3f}'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tier", choices=("quality", "fast"), default="fast")
    parser.add_argument("--dataset", choices=("longmemeval", "locomo"), default="longmemeval")
    parser.add_argument("--data", type=Path, default=retrieval.DEFAULT_DATA)
    parser.add_argument("--pool", type=int, default=max(POOLS), help="candidates reranked")
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="stores")
    parser.add_argument("--dir", type=Path, default=None, help="where temporary dirs go")
    parser.add_argument(
        "--rescore",
        default="",
        help="also read the pool otherwise: whole (512 tokens), windows (sentences), or both",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    ways = [w for w in args.rescore.split(",") if w]
    if any(w not in ("whole", "windows") for w in ways):
        parser.error("--rescore takes whole, windows or whole,windows")
    if args.dataset == "locomo":
        haystacks = retrieval.load_locomo(args.data, args.limit)
    else:
        haystacks = retrieval.load_longmemeval(args.data, None)[: args.limit]
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="mnemolog-headroom-") as scratch:
        gathered = gather(haystacks, args.tier, args.pool, Path(scratch))
    cache = Settings().model_cache
    rescores = {how: rescored(gathered.pooled, cache, how) for how in ways}
    out = report(gathered, args.pool, rescores)
    name = f"{args.dataset}, {args.tier} tier, pool {args.pool}"
    if args.json:
        print(json.dumps({"run": name, **out}, default=str))
    else:
        print_report(name, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
