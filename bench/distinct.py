"""Distinct facts that share a template, and corrections among them: does the store keep and
recall every fact, and serve each correction first?

A memory layer's first promise is that what it was told, it recalls. The write decision makes a
new memory the next version of an older one (``superseded``: the older text is hidden) when the
two are similar enough, or links it to the older one as a possible update (``created`` with
``possiblyUpdates``: both served, the newer first). Facts built on one template but about
different named things ("The velaro service uses Redis and listens on port 8080." / "The quintos
service uses Redis and listens on port 8080.") are the hard case for the first, and a newer text
that corrects an older one ("Zed prefers tea." / "Zed prefers coffee.") is what the rule is for.

For each embedder tier and size, N facts from ``factgen.py`` (50 shapes, every fact naming its
own thing by a name unique across the set) are written into one container of a fresh
``mnemolog serve`` child: the first ``--single`` facts one memory per request, the rest in
batches. The statuses the server answered are counted (``linked``: a ``possiblyUpdates`` link
between two distinct facts), then a sample of questions that name the thing ("Which port does
the velaro service listen on?") is searched: hit@1 and hit@10 count the fact's own memory id
*serving the fact's own text* (a superseded chain serves the newer text), overall and per shape.
The same facts and questions go through an in-memory SQLite FTS5 table (porter unicode61, the
question's words OR-ed, ranked by bm25) as the baseline.

Then, in the same container, ``--corrections`` pairs (20 shapes, each with and without a change
marker in the newer text): every pair's older text one memory per request, then every newer
text, so that many memories lie between the two of a pair. A pair is ``linked`` when the newer
was answered ``superseded`` with the older's id or ``possiblyUpdates`` naming it. Each pair's
question is searched at limits 3, 5 and 10 (and at 10 with ``diversify`` off): the pair is
*newer first* when the newer text is served and the older is not, or is ranked below it. Where
both are served, the older's hit should name the newer in ``possiblyOutdatedBy``. Prints its
figures and the goals met or not; asserts nothing.

    .venv/bin/python bench/distinct.py [--tiers fast,quality] [--sizes 10000,100000]
                                       [--single 2000] [--queries 1000] [--corrections 1000]
                                       [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from factgen import Correction, Fact, make_corpus
from keepalive import KeepAlive, TransportError
from latency import latency_summary
from recall import (
    MNEMOLOG,
    SEARCH_LIMIT,
    TIERS,
    WARMUP_REQUESTS,
    Server,
    client,
    first_search,
    parse_list,
    progress,
    server_env,
)

DEFAULT_TIERS = ("fast", "quality")
DEFAULT_SIZES = (10_000, 100_000)
CONTAINER = "distinct"
STATUSES = ("created", "superseded", "deduplicated")
GOAL_HIT10 = 0.995
GOAL_HIT1 = 0.95
GOAL_NEWER_FIRST = 0.92
# How each pair's question is searched: (key, limit, diversify; None is the API's default).
PAIR_SEARCHES: tuple[tuple[str, int, bool | None], ...] = (
    ("at3", 3, None),
    ("at5", 5, None),
    ("at10", 10, None),
    ("at10_nodiversify", 10, False),
)
GOAL_SEARCHES = ("at3", "at5", "at10")


class Outcome(NamedTuple):
    """What ``POST /memories`` answered for one memory."""

    id: str
    status: str
    updates: str | None  # possiblyUpdates: the memory this one may update (both kept)
    flagged: bool


def sample_queries(count: int, single: int, queries: int, seed: int) -> dict[str, list[int]]:
    """The facts whose questions are asked: half from the singly written ones, half from the
    batched ones (all of a part when it is smaller), deterministic."""
    r = random.Random(seed + 1)
    parts = {"single": range(min(single, count)), "batch": range(min(single, count), count)}
    want_single = min(len(parts["single"]), queries // 2 if len(parts["batch"]) else queries)
    want_batch = min(len(parts["batch"]), queries - want_single)
    want_single = min(len(parts["single"]), queries - want_batch)
    return {
        "single": sorted(r.sample(parts["single"], want_single)),
        "batch": sorted(r.sample(parts["batch"], want_batch)),
    }


# --- mnemolog over HTTP -----------------------------------------------------------------------


def _write_phase(
    http: KeepAlive,
    texts: list[str],
    requests: list[list[int]],
    outcomes: list[Outcome | None],
    progress_label: str,
) -> dict[str, Any]:
    """Send each request's texts as one ``POST /memories``, filling ``outcomes``; the phase's
    throughput, latency and answer figures."""
    latencies: list[float] = []
    errors = done = 0
    total = sum(len(ns) for ns in requests)
    report_every = max(1, len(requests) // 10)
    began = time.perf_counter()
    for k, ns in enumerate(requests):
        body = {"containerTag": CONTAINER, "memories": [{"content": texts[n]} for n in ns]}
        t0 = time.perf_counter()
        try:
            response = http.post("/memories", json=body)
        except TransportError:
            errors += 1
            continue
        latencies.append(time.perf_counter() - t0)
        done += len(ns)
        if response.status_code != 200:
            errors += 1
            continue
        for n, o in zip(ns, response.json()["memories"], strict=True):
            outcomes[n] = Outcome(
                o["id"], o["status"], o.get("possiblyUpdates"), bool(o["flagged"])
            )
        if (k + 1) % report_every == 0:
            elapsed = time.perf_counter() - began
            progress(f"  {progress_label} {done:,}/{total:,} in {elapsed:.0f} s")
    elapsed = time.perf_counter() - began
    answered = [o for ns in requests for n in ns if (o := outcomes[n]) is not None]
    counts = Counter(o.status for o in answered)
    return {
        "memories": len(answered),
        "requests": len(requests),
        "per_request": len(requests[0]),
        "seconds": elapsed,
        "per_s": len(answered) / elapsed if elapsed else 0.0,
        "statuses": {s: counts.get(s, 0) for s in STATUSES},
        "linked": sum(o.updates is not None for o in answered),
        "flagged": sum(o.flagged for o in answered),
        "errors": errors,
        **latency_summary(latencies),
    }


def write_texts(
    base_url: str, texts: list[str], single: int, batch: int, label: str
) -> tuple[list[Outcome | None], dict[str, Any]]:
    """Singles then batches into one container: what each text was answered (None where the
    request failed), and the figures of both phases."""
    outcomes: list[Outcome | None] = [None] * len(texts)
    single = min(single, len(texts))
    starts = range(single, len(texts), batch)
    phases = {
        "single": [[n] for n in range(single)],
        "batch": [list(range(s, min(s + batch, len(texts)))) for s in starts],
    }
    figures: dict[str, Any] = {}
    with client(base_url) as http:
        for phase, requests in phases.items():
            if requests:
                figures[phase] = _write_phase(
                    http, texts, requests, outcomes, f"{label}: {phase} writes"
                )
    return outcomes, figures


def served_facts(ids: list[str | None]) -> list[bool]:
    """Whether each fact is still what its chain serves: the last fact written to a chain is
    its latest version (one client wrote them in order); every earlier one is hidden."""
    last: dict[str, int] = {}
    for n, memory_id in enumerate(ids):
        if memory_id is not None:
            last[memory_id] = n
    return [memory_id is not None and last[memory_id] == n for n, memory_id in enumerate(ids)]


def search_facts(
    base_url: str, facts: list[Fact], ids: list[str | None], asked: list[int], label: str
) -> tuple[dict[int, int | None], dict[str, Any]]:
    """POST /search for each asked fact's question: the rank at which the fact's own memory id
    served the fact's own text (None: not in the results), and the latency figures."""
    ranks: dict[int, int | None] = {}
    latencies: list[float] = []
    errors = 0
    report_every = max(1, len(asked) // 5)
    with client(base_url) as http:
        for n in asked[:WARMUP_REQUESTS]:  # connection and first-call costs, not counted
            http.post("/search", json={"q": facts[n].question, "containerTag": CONTAINER})
        for k, n in enumerate(asked):
            body = {"q": facts[n].question, "containerTag": CONTAINER, "limit": SEARCH_LIMIT}
            ranks[n] = None
            t0 = time.perf_counter()
            try:
                response = http.post("/search", json=body)
            except TransportError:
                errors += 1
                continue
            latencies.append(time.perf_counter() - t0)
            if response.status_code != 200:
                errors += 1
                continue
            ranks[n] = next(
                (
                    i
                    for i, hit in enumerate(response.json()["results"])
                    if hit.get("id") == ids[n] and hit.get("content") == facts[n].text
                ),
                None,
            )
            if (k + 1) % report_every == 0:
                progress(f"  {label}: searched {k + 1:,}/{len(asked):,}")
        total = http.get("/memories", params={"containerTag": CONTAINER, "limit": 1}).json()
    return ranks, {
        "queries": len(latencies),
        "errors": errors,
        "live_memories_reported": int(total["total"]),
        **latency_summary(latencies),
    }


# --- corrections ------------------------------------------------------------------------------


def _rank(results: list[dict[str, Any]], text: str) -> int | None:
    return next((i for i, hit in enumerate(results) if hit.get("content") == text), None)


def search_pair(http: KeepAlive, pair: Correction, new_id: str | None) -> dict[str, Any]:
    """The pair's question at each of ``PAIR_SEARCHES``: the ranks serving the newer and the
    older text (None: not served), and whether the older's hit names the newer memory in
    ``possiblyOutdatedBy`` (None unless both are served). Raises on a transport error."""
    found: dict[str, Any] = {}
    for key, limit, diversify in PAIR_SEARCHES:
        body: dict[str, Any] = {"q": pair.question, "containerTag": CONTAINER, "limit": limit}
        if diversify is not None:
            body["diversify"] = diversify
        response = http.post("/search", json=body)
        results = response.json()["results"] if response.status_code == 200 else []
        new, old = _rank(results, pair.new), _rank(results, pair.old)
        flagged = None
        if new is not None and old is not None:
            flagged = new_id in results[old].get("possiblyOutdatedBy", [])
        found[key] = {"new": new, "old": old, "flagged": flagged, "status": response.status_code}
    return found


def search_pairs(
    base_url: str, pairs: list[Correction], news: list[Outcome | None], label: str
) -> list[dict[str, Any] | None]:
    """``search_pair`` for every pair (None where a request failed on the transport)."""
    found: list[dict[str, Any] | None] = []
    report_every = max(1, len(pairs) // 5)
    with client(base_url) as http:
        for k, (pair, new) in enumerate(zip(pairs, news, strict=True)):
            try:
                found.append(search_pair(http, pair, new.id if new else None))
            except TransportError:
                found.append(None)
            if (k + 1) % report_every == 0:
                progress(f"  {label}: searched {k + 1:,}/{len(pairs):,} pairs")
    return found


def newer_first(ranks: dict[str, Any]) -> bool:
    """The newer text served, and the older not served or ranked below it."""
    return ranks["new"] is not None and (ranks["old"] is None or ranks["new"] < ranks["old"])


def pair_record(
    pair: Correction, old: Outcome | None, new: Outcome | None, found: dict[str, Any] | None
) -> dict[str, Any]:
    """One pair: its texts, what both writes were answered, and its ranks at each search."""
    linked = (
        old is not None
        and new is not None
        and ((new.status == "superseded" and new.id == old.id) or new.updates == old.id)
    )
    return {
        **pair._asdict(),
        "old_id": old.id if old else None,
        "old_status": old.status if old else None,
        "old_updates": old.updates if old else None,
        "new_id": new.id if new else None,
        "new_status": new.status if new else None,
        "new_updates": new.updates if new else None,
        "linked": linked,
        # Taken as a version of some other memory: that memory's fact is hidden.
        "hid_other": new is not None
        and new.status == "superseded"
        and (old is None or new.id != old.id),
        "ranks": found,
    }


def tally(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts over some pairs: linked, newer first at each search, and, where both texts were
    served at 10, how often the older named the newer in ``possiblyOutdatedBy``."""
    searched = [r for r in records if r["ranks"] is not None]
    both = [r for r in searched if r["ranks"]["at10"]["flagged"] is not None]
    return {
        "n": len(records),
        "linked": sum(r["linked"] for r in records),
        "searched": len(searched),
        "newer_first": {
            key: sum(newer_first(r["ranks"][key]) for r in searched) for key, _, _ in PAIR_SEARCHES
        },
        "both_served_at10": len(both),
        "flagged_at10": sum(r["ranks"]["at10"]["flagged"] for r in both),
    }


def _answers(statuses: Iterable[tuple[str | None, bool]]) -> dict[str, int]:
    """(status, linked) pairs counted as created (not linked), linked, superseded, and the rest."""
    counts: Counter[str] = Counter()
    for status, linked in statuses:
        counts["linked" if linked and status == "created" else status or "failed"] += 1
    return dict(counts)


def summarise_pairs(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per shape and marker, per marker and over all pairs; and what the writes were answered."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(f"{r['shape']}/{'marked' if r['marked'] else 'plain'}", []).append(r)
    news_linked_elsewhere = sum(
        r["new_updates"] is not None and r["new_updates"] != r["old_id"] for r in records
    )
    return {
        "pairs": len(records),
        "older_answers": _answers((r["old_status"], r["old_updates"] is not None) for r in records),
        "newer_answers": _answers((r["new_status"], r["new_updates"] is not None) for r in records),
        "newer_superseded_the_older": sum(
            r["new_status"] == "superseded" and not r["hid_other"] for r in records
        ),
        "newer_superseded_another": sum(r["hid_other"] for r in records),
        "newer_linked_to_the_older": sum(
            r["new_updates"] is not None and r["new_updates"] == r["old_id"] for r in records
        ),
        "newer_linked_to_another": news_linked_elsewhere,
        "by_shape": {key: tally(group) for key, group in sorted(groups.items())},
        "marked": tally([r for r in records if r["marked"]]),
        "plain": tally([r for r in records if not r["marked"]]),
        "all": tally(records),
    }


def run_corrections(base_url: str, pairs: list[Correction], label: str) -> dict[str, Any]:
    """Every older text singly, then every newer text singly, then every pair's question."""
    progress(f"{label}: {len(pairs):,} corrections, older texts")
    olds, old_writes = write_texts(
        base_url, [p.old for p in pairs], len(pairs), 1, f"{label} older"
    )
    progress(f"{label}: newer texts")
    news, new_writes = write_texts(
        base_url, [p.new for p in pairs], len(pairs), 1, f"{label} newer"
    )
    progress(f"{label}: searching {len(pairs):,} pairs' questions")
    found = search_pairs(base_url, pairs, news, label)
    records = [pair_record(*row) for row in zip(pairs, olds, news, found, strict=True)]
    return {
        "writes": {"older": old_writes.get("single"), "newer": new_writes.get("single")},
        "search_errors": sum(f is None for f in found),
        **summarise_pairs(records),
        "records": records,
    }


# --- the baseline -----------------------------------------------------------------------------


def fts5_ranks(facts: list[Fact], asked: list[int]) -> tuple[dict[int, int | None], dict[str, Any]]:
    """An in-memory FTS5 table of the facts (porter unicode61); each question's words OR-ed,
    quoted, ranked by bm25: the rank of the fact's own row (None: not in the top 10)."""
    db = sqlite3.connect(":memory:")
    t0 = time.perf_counter()
    db.execute("CREATE VIRTUAL TABLE facts USING fts5(content, tokenize='porter unicode61')")
    db.executemany(
        "INSERT INTO facts(rowid, content) VALUES (?, ?)",
        ((n + 1, fact.text) for n, fact in enumerate(facts)),
    )
    db.commit()
    build = time.perf_counter() - t0
    ranks: dict[int, int | None] = {}
    latencies: list[float] = []
    for n in asked:
        words = dict.fromkeys(w.lower() for w in re.findall(r"\w+", facts[n].question))
        match = " OR ".join(f'"{w}"' for w in words)
        t0 = time.perf_counter()
        rows = db.execute(
            "SELECT rowid FROM facts WHERE facts MATCH ? ORDER BY bm25(facts) LIMIT ?",
            (match, SEARCH_LIMIT),
        ).fetchall()
        latencies.append(time.perf_counter() - t0)
        ranks[n] = next((i for i, (rowid,) in enumerate(rows) if rowid == n + 1), None)
    db.close()
    return ranks, {"build_seconds": build, **latency_summary(latencies)}


# --- one run ----------------------------------------------------------------------------------


def hit_rates(
    ranks: dict[int, int | None], sample: dict[str, list[int]], weights: dict[str, float]
) -> dict[str, Any]:
    """hit@1 and hit@10 per part of the sample, and over all facts (each part weighted by its
    share of the N facts)."""
    figures: dict[str, Any] = {}
    for part, asked in sample.items():
        if asked:
            figures[part] = {
                "n": len(asked),
                "hit1": sum(ranks[n] == 0 for n in asked) / len(asked),
                "hit10": sum(ranks[n] is not None for n in asked) / len(asked),
            }
    parts = [p for p in figures if weights.get(p)]
    total = sum(weights[p] for p in parts) or 1.0
    figures["all"] = {
        "n": sum(figures[p]["n"] for p in parts),
        **{k: sum(figures[p][k] * weights[p] for p in parts) / total for k in ("hit1", "hit10")},
    }
    return figures


def by_shape(
    facts: list[Fact],
    outcomes: list[Outcome | None],
    asked: list[int],
    ranks: dict[int, int | None],
    fts: dict[int, int | None],
) -> dict[str, dict[str, int]]:
    """Per shape: facts, superseded, linked (a ``possiblyUpdates`` link to another distinct
    fact), flagged, and of the asked ones mnemolog's hits at 1 and 10 and FTS5's at 10."""
    keys = ("facts", "superseded", "linked", "flagged", "asked", "hit1", "hit10", "fts5_hit10")
    shapes: dict[str, dict[str, int]] = {}
    for fact, o in zip(facts, outcomes, strict=True):
        s = shapes.setdefault(fact.shape, dict.fromkeys(keys, 0))
        s["facts"] += 1
        s["superseded"] += o is not None and o.status == "superseded"
        s["linked"] += o is not None and o.updates is not None
        s["flagged"] += o is not None and o.flagged
    for n in asked:
        s = shapes[facts[n].shape]
        s["asked"] += 1
        s["hit1"] += ranks[n] == 0
        s["hit10"] += ranks[n] is not None
        s["fts5_hit10"] += fts[n] is not None
    return dict(sorted(shapes.items()))


def judge_goals(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The goals, each with its figure: no distinct fact hidden, the facts found, and each
    correction served before what it corrects."""
    hidden = {
        "distinct phase": sum(w["statuses"]["superseded"] for w in run["writes"].values()),
    }
    corrections = run.get("corrections")
    if corrections:
        hidden["older texts"] = corrections["older_answers"].get("superseded", 0)
        hidden["newer texts of another memory"] = corrections["newer_superseded_another"]
    detail = ", ".join(f"{v} {k}" for k, v in hidden.items())
    m = run["mnemolog"]["all"]
    total_hidden = sum(hidden.values())
    goals = [
        {
            "label": f"distinct superseded == 0 ({detail})",
            "value": total_hidden,
            "met": not total_hidden,
        },
        {"label": f"hit@10 >= {GOAL_HIT10}", "value": m["hit10"], "met": m["hit10"] >= GOAL_HIT10},
        {"label": f"hit@1 >= {GOAL_HIT1}", "value": m["hit1"], "met": m["hit1"] >= GOAL_HIT1},
    ]
    if corrections and corrections["all"]["searched"]:
        total = corrections["all"]
        for key in GOAL_SEARCHES:
            share = total["newer_first"][key] / total["searched"]
            goals.append(
                {
                    "label": f"newer first {key.replace('at', 'at ')} >= {GOAL_NEWER_FIRST}",
                    "value": share,
                    "met": share >= GOAL_NEWER_FIRST,
                }
            )
    return goals


def serve_and_measure(
    server: Server,
    facts: list[Fact],
    pairs: list[Correction],
    asked: list[int],
    run: dict[str, Any],
    label: str,
) -> tuple[list[Outcome | None], dict[int, int | None]]:
    """Boot, write the facts, ask the sample, run the corrections, stop: the facts' outcomes
    and ranks (the figures go into ``run``)."""
    run["boot_s"] = server.start()
    first_search(server.base_url, CONTAINER)  # loads the tier's model before the writes
    progress(f"{label}: server up (pid {server.pid}) in {run['boot_s']:.1f} s, writing")
    texts = [f.text for f in facts]
    outcomes, run["writes"] = write_texts(
        server.base_url, texts, run["single"], run["batch"], label
    )
    ids = [o.id if o else None for o in outcomes]
    progress(f"{label}: searching {len(asked):,} questions")
    ranks, run["search"] = search_facts(server.base_url, facts, ids, asked, label)
    if pairs:
        run["corrections"] = run_corrections(server.base_url, pairs, label)
    run["stop"] = server.stop()
    return outcomes, ranks


def bench_run(workdir: Path, tier: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    label = f"{tier} {size:,}"
    single = min(args.single, size)
    run: dict[str, Any] = {"tier": tier, "size": size, "single": single, "batch": args.batch}
    progress(f"{label}: making {size:,} facts and {args.corrections:,} correction pairs")
    facts, pairs = make_corpus(size, args.corrections, args.seed)
    sample = sample_queries(size, single, args.queries, args.seed)
    asked = sample["single"] + sample["batch"]
    weights = {"single": single / size, "batch": (size - single) / size}
    data_dir = workdir / f"{tier}-{size}"
    server = Server(data_dir, server_env(tier, args.model_cache_dir), workdir / f"{label}.log")
    started = time.perf_counter()
    try:
        outcomes, ranks = serve_and_measure(server, facts, pairs, asked, run, label)
    except Exception as exc:  # a crashed or refusing server is reported, not raised
        run["error"] = f"{type(exc).__name__}: {exc}"
        progress(f"{label}: failed: {run['error']}\n{server.log_tail()}")
        return run
    finally:
        server.kill()
        shutil.rmtree(data_dir, ignore_errors=True)
    run["server_seconds"] = time.perf_counter() - started
    served = served_facts([o.id if o else None for o in outcomes])
    run["served"] = {
        "facts": sum(served),
        "share": sum(served) / size,
        "hidden_asked_missed_at_10": sum(not served[n] and ranks[n] is None for n in asked),
        "served_asked_missed_at_10": sum(served[n] and ranks[n] is None for n in asked),
    }
    run["linked_distinct"] = sum(o is not None and o.updates is not None for o in outcomes)
    run["mnemolog"] = hit_rates(ranks, sample, weights)
    progress(f"{label}: FTS5 baseline")
    fts, run["fts5"] = fts5_ranks(facts, asked)
    run["fts5"].update(hit_rates(fts, sample, weights))
    run["templates"] = by_shape(facts, outcomes, asked, ranks, fts)
    run["goal_hit10"] = {"target": GOAL_HIT10, "met": run["mnemolog"]["all"]["hit10"] >= GOAL_HIT10}
    run["goals"] = judge_goals(run)
    return run


# --- the report -------------------------------------------------------------------------------


def _pct(part: float, whole: float) -> str:
    return f"{part * 100 / whole:.1f}%" if whole else "-"


def _share(part: float, whole: float) -> str:
    return f"{part / whole:.3f}" if whole else "-"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def render_writes(run: dict[str, Any]) -> list[str]:
    lines = [
        f"  {'writes':<16}{'memories':>9}{'per s':>8}{'p50 ms':>8}{'p95 ms':>8}"
        f"  {'created':>15}{'superseded':>15}{'deduplicated':>15}{'linked':>8}{'errors':>7}"
    ]
    for phase, w in run["writes"].items():
        name = "single" if phase == "single" else f"batches of {w['per_request']}"
        st = w["statuses"]
        cells = "".join(f"{st[s]:>7,} {_pct(st[s], w['memories']):>7}" for s in STATUSES)
        lines.append(
            f"  {name:<16}{w['memories']:>9,}{w['per_s']:>8,.0f}{_ms(w['p50_ms']):>8}"
            f"{_ms(w['p95_ms']):>8}  {cells}{w['linked']:>8,}{w['errors']:>7}"
        )
    return lines


def render_recall(run: dict[str, Any]) -> list[str]:
    m, f, s = run["mnemolog"], run["fts5"], run["search"]
    parts = [p for p in ("single", "batch", "all") if p in m]
    titles = {
        "single": f"single (n={m.get('single', {}).get('n', 0)})",
        "batch": f"batched (n={m.get('batch', {}).get('n', 0)})",
        "all": "all facts (weighted)",
    }
    lines = [f"  {'recall':<22}" + "".join(f"{titles[p]:>22}" for p in parts)]
    for name, figures in (("mnemolog", m), ("FTS5 bm25", f)):
        for k, at in (("hit1", "@1"), ("hit10", "@10")):
            lines.append(
                f"  {name + ' hit' + at:<22}" + "".join(f"{figures[p][k]:>22.3f}" for p in parts)
            )
    lines.append(
        f"  search: mnemolog over HTTP p50 {_ms(s['p50_ms'])} ms, p95 {_ms(s['p95_ms'])} ms"
        f" ({s['queries']:,} queries, {s['errors']} errors); FTS5 in process p50"
        f" {_ms(f['p50_ms'])} ms, p95 {_ms(f['p95_ms'])} ms"
    )
    return lines


def render_shapes(shapes: dict[str, dict[str, int]]) -> list[str]:
    lines = [
        f"  {'by shape':<13}{'facts':>7}{'superseded':>11}{'linked':>8}{'flagged':>8}"
        f"{'asked':>7}{'hit@1':>7}{'hit@10':>8}{'FTS5@10':>8}"
    ]
    for name, s in shapes.items():
        lines.append(
            f"  {name:<13}{s['facts']:>7,}{s['superseded']:>11,}{s['linked']:>8,}"
            f"{s['flagged']:>8,}{s['asked']:>7,}{_share(s['hit1'], s['asked']):>7}"
            f"{_share(s['hit10'], s['asked']):>8}{_share(s['fts5_hit10'], s['asked']):>8}"
        )
    return lines


def _tally_row(name: str, marker: str, t: dict[str, Any]) -> str:
    first = "".join(
        f"{_share(t['newer_first'][key], t['searched']):>9}" for key, _, _ in PAIR_SEARCHES
    )
    return (
        f"  {name:<13}{marker:<8}{t['n']:>5,}{_share(t['linked'], t['n']):>8}{first}"
        f"{str(t['flagged_at10']) + '/' + str(t['both_served_at10']):>13}"
    )


def _mix(answers: dict[str, int]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in sorted(answers.items(), key=lambda kv: -kv[1]))


def render_corrections(c: dict[str, Any]) -> list[str]:
    lines = [
        f"  corrections: {c['pairs']:,} pairs in the same container, every older text written"
        f" singly, then every newer text ({c['search_errors']} search errors)",
        f"    older texts answered: {_mix(c['older_answers'])}",
        f"    newer texts answered: {_mix(c['newer_answers'])}; superseded the older"
        f" {c['newer_superseded_the_older']:,}, superseded another memory"
        f" {c['newer_superseded_another']:,}, linked to the older"
        f" {c['newer_linked_to_the_older']:,}, linked to another {c['newer_linked_to_another']:,}",
        "    newer first: the newer text served, the older not served or ranked below it;"
        " flagged: the older's hit names the newer in possiblyOutdatedBy, of pairs with both"
        " served at 10",
        f"  {'shape':<13}{'marker':<8}{'n':>5}{'linked':>8}{'first@3':>9}{'first@5':>9}"
        f"{'first@10':>9}{'nodiv@10':>9}{'flagged':>13}",
    ]
    for key, t in c["by_shape"].items():
        shape, marker = key.split("/")
        lines.append(_tally_row(shape, marker, t))
    lines += [_tally_row("all", marker, c[marker]) for marker in ("marked", "plain")]
    lines.append(_tally_row("all", "", c["all"]))
    return lines


def render_run(run: dict[str, Any]) -> list[str]:
    head = (
        f"{run['tier']} tier, {run['size']:,} distinct facts in one container"
        f" ({run['single']:,} single-memory writes, then batches of {run['batch']})"
    )
    if "wall_seconds" in run:
        head += f", run took {run['wall_seconds']:.0f} s"
    if "error" in run:
        return [head, f"  FAILED: {run['error']}"]
    sv, s = run["served"], run["search"]
    lines = [head, *render_writes(run)]
    lines.append(
        f"  facts still served (their chain's latest version is their own text):"
        f" {sv['facts']:,} of {run['size']:,} ({_pct(sv['facts'], run['size'])}); the server"
        f" reports {s['live_memories_reported']:,} live memories; {run['linked_distinct']:,}"
        f" distinct facts linked to another as its possible update"
    )
    lines += render_recall(run)
    lines.append(
        f"  mnemolog misses at 10: {sv['hidden_asked_missed_at_10']} of hidden facts,"
        f" {sv['served_asked_missed_at_10']} of facts still served"
    )
    lines += render_shapes(run["templates"])
    if run.get("corrections"):
        lines += render_corrections(run["corrections"])
    lines.append("  goals:")
    for goal in run["goals"]:
        value = goal["value"] if isinstance(goal["value"], int) else f"{goal['value']:.3f}"
        lines.append(f"    {goal['label']}: {'met' if goal['met'] else 'NOT met'} ({value})")
    return lines


def render(report: dict[str, Any]) -> str:
    env = report["environment"]
    lines = [
        "mnemolog: distinct templated facts and corrections, written and recalled through the"
        " REST API",
        f"  {env['cpus']} CPUs  |  Python {env['python']}  |  SQLite {env['sqlite']}  |  seed"
        f" {report['seed']}  |  {report['queries']} questions a run  |  load average before"
        f" {env['load_average_before']}, after {env['load_average_after']}",
    ]
    if env["pythonpath"]:
        lines.append(f"  server code from PYTHONPATH={env['pythonpath']}")
    for run in report["runs"]:
        lines += ["", *render_run(run)]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[str], list[int]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiers", default=None, help="embedder tiers (default fast,quality)")
    parser.add_argument("--sizes", default=None, help="facts per run (default 10000,100000)")
    parser.add_argument("--single", type=int, default=2000, help="facts written one by one")
    parser.add_argument("--batch", type=int, default=500, help="memories per batched request")
    parser.add_argument("--queries", type=int, default=None, help="questions (default 1000)")
    parser.add_argument(
        "--corrections", type=int, default=None, help="correction pairs (default 1000; 0: none)"
    )
    parser.add_argument("--seed", type=int, default=1, help="facts and sample (default 1)")
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path("."),
        help="a temporary data directory is made inside it and removed afterwards",
    )
    parser.add_argument(
        "--model-cache-dir", type=Path, default=None, help="MNEMOLOG_MODEL_CACHE_DIR"
    )
    parser.add_argument(
        "--quick", action="store_true", help="2000 facts, 500 questions, 300 pairs, fast"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    tiers = parse_list(args.tiers) if args.tiers else (["fast"] if args.quick else DEFAULT_TIERS)
    if not tiers or any(t not in TIERS for t in tiers):
        parser.error(f"--tiers takes a comma-separated subset of {', '.join(TIERS)}")
    try:
        sizes = [int(s) for s in parse_list(args.sizes)] if args.sizes else None
    except ValueError:
        parser.error("--sizes takes comma-separated integers")
    sizes = sizes or ([2_000] if args.quick else list(DEFAULT_SIZES))
    args.queries = args.queries or (500 if args.quick else 1000)
    if args.corrections is None:
        args.corrections = 300 if args.quick else 1000
    if min(sizes) < 1 or args.queries < 1 or args.single < 0 or not 1 <= args.batch <= 1000:
        parser.error("sizes and --queries must be positive, --single >= 0, --batch 1 to 1000")
    if args.corrections < 0:
        parser.error("--corrections must be 0 or more")
    if not MNEMOLOG.exists():
        parser.error(f"{MNEMOLOG} not found: run from the project's virtualenv")
    return args, list(tiers), sizes


def main(argv: list[str] | None = None) -> int:
    args, tiers, sizes = parse_args(argv)
    load_before = os.getloadavg()
    workdir = Path(tempfile.mkdtemp(prefix="mnemolog-distinct-", dir=args.dir)).resolve()
    started = time.perf_counter()
    runs = []
    try:
        for tier in tiers:
            for size in sizes:
                t0 = time.perf_counter()
                run = bench_run(workdir, tier, size, args)
                run["wall_seconds"] = time.perf_counter() - t0
                progress(f"{tier} {size:,}: done in {run['wall_seconds']:.0f} s")
                runs.append(run)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report = {
        "benchmark": "distinct",
        "seed": args.seed,
        "queries": args.queries,
        "corrections": args.corrections,
        "total_seconds": time.perf_counter() - started,
        "environment": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
            # The server runs the mnemolog this points at, when set (e.g. an export of a commit).
            "pythonpath": os.environ.get("PYTHONPATH"),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
        "runs": runs,
    }
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
