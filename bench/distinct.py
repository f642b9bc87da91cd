"""Distinct facts that share a template: does the store keep, and recall, every one of them?

A memory layer's first promise is that what it was told, it recalls. The write decision makes a
new memory the next version of an older one (``superseded``: the older text is hidden) when the
two are similar enough, and facts built on one template but about different named things
("The velaro service uses Redis and listens on port 8080." / "The quintos service uses Redis
and listens on port 8080.") are the hard case for that rule. For each embedder tier and size,
N such facts, every one naming its own thing by a name unique across the set, are written into
one container of a fresh ``mnemolog serve`` child: the first ``--single`` facts one memory per
request, the rest in batches. The statuses the server answered are counted, then a sample of
questions that name the thing ("Which port does the velaro service listen on?") is searched:
hit@1 and hit@10 count the fact's own memory id *serving the fact's own text* (a superseded
chain serves the newer text). The same facts and questions go through an in-memory SQLite FTS5
table (porter unicode61, the question's words OR-ed, ranked by bm25) as the baseline. Prints
its figures; asserts nothing.

    .venv/bin/python bench/distinct.py [--tiers fast,quality] [--sizes 10000,100000]
                                       [--single 2000] [--queries 1000] [--quick] [--json]
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from keepalive import TransportError
from latency import latency_summary
from recall import (
    MNEMOLOG,
    NAMES,
    SEARCH_LIMIT,
    TEAMS,
    TIERS,
    WARMUP_REQUESTS,
    Server,
    _words,
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
GOAL_HIT10 = 0.99

# --- names ------------------------------------------------------------------------------------
#
# Made-up names built from syllables ("velaro", "quintos", "brenadil"), one per fact. A name must
# stay one distinct term after the baseline's porter stemmer too ("quintos" and "quinto" are
# one term to it), and must not be, or stem to, any word of the templates and pools.

ONSETS = _words("b c d f g h j k l m n p r s t v z br dr fl gr kr pl st tr qu sh")
VOWELS = _words("a e i o u a e i o ai")
CODAS = ["", "", "", "n", "r", "l", "s", "x", "nd", "th"]


def _syllable_name(r: random.Random) -> str:
    parts = [r.choice(ONSETS) + r.choice(VOWELS) for _ in range(r.choice((2, 2, 3)))]
    return "".join(parts) + r.choice(CODAS)


def _stems(words: list[str]) -> list[str]:
    """Each word's terms under FTS5's ``porter unicode61``, joined by spaces."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE w USING fts5(t, tokenize='porter unicode61')")
    db.executemany("INSERT INTO w(rowid, t) VALUES (?, ?)", enumerate(words, 1))
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(w, 'instance')")
    terms: dict[int, list[str]] = {}
    for term, doc in db.execute("SELECT term, doc FROM v ORDER BY doc, offset"):
        terms.setdefault(doc, []).append(term)
    db.close()
    return [" ".join(terms.get(n, [])) for n in range(1, len(words) + 1)]


def unique_names(count: int, r: random.Random, reserved: set[str]) -> list[str]:
    """``count`` distinct names, no two with the same stem, none stemming like a reserved word."""
    taken = set(_stems(sorted(reserved)))
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < count:
        candidates = []
        while len(candidates) < (count - len(names)) * 2 + 16:
            name = _syllable_name(r)
            if name not in seen and name not in reserved and 5 <= len(name) <= 10:
                seen.add(name)
                candidates.append(name)
        for name, stem in zip(candidates, _stems(candidates), strict=True):
            if " " not in stem and stem not in taken and len(names) < count:
                taken.add(stem)
                names.append(name)
    return names


# --- facts and questions ----------------------------------------------------------------------
#
# Eight templates; every slot but the name comes from a small pool, so a fact shares most of its
# words with the other facts of its template. Each fact comes with one question naming its thing.

LANGUAGES = _words("Python Go Rust TypeScript Java Kotlin Ruby Elixir Scala Swift")
RULES = [
    "run the linter before pushing to main",
    "every pull request needs two approvals",
    "never force-push to the release branch",
    "tag each release with a semantic version",
    "keep the test coverage above 80 percent",
    "update the changelog with every merge",
]
DATABASES = _words("PostgreSQL MySQL Redis MongoDB SQLite Cassandra DynamoDB ClickHouse")
PORTS = [3000, 4000, 5000, 6000, 7000, 8000, 8080, 8443, 9000, 9090]
ROLES = [
    "backend engineer",
    "product designer",
    "data scientist",
    "engineering manager",
    "site reliability engineer",
    "technical writer",
    "QA engineer",
    "product manager",
]
SPECIES = _words("cat dog parrot rabbit hamster tortoise goldfish ferret")
PET_PLACES = ["kitchen", "hallway", "garden", "living room", "bedroom"]
REGIONS = _words("eu-west-1 us-east-1 us-west-2 ap-south-1 eu-central-1 ap-northeast-1")
VERSIONS = [f"{a}.{b}.{c}" for a in (1, 2, 3) for b in (0, 4) for c in (0, 2)]
PURPOSES = [
    "nightly backups",
    "CI builds",
    "the staging database",
    "log aggregation",
    "GPU training jobs",
    "the internal wiki",
    "metrics collection",
    "video transcoding",
]
MONTHS = _words("January February March April May June July August September October")

Fact = tuple[str, str, str]  # (template, text, question)


def _repo(r: random.Random, name: str) -> Fact:
    text = f"The {name} repository is written in {r.choice(LANGUAGES)}; {r.choice(RULES)}."
    q = r.choice(
        [
            f"What language is the {name} repository written in?",
            f"What is the rule for the {name} repository?",
        ]
    )
    return "repo", text, q


def _service(r: random.Random, name: str) -> Fact:
    text = f"The {name} service uses {r.choice(DATABASES)} and listens on port {r.choice(PORTS)}."
    q = r.choice(
        [
            f"Which port does the {name} service listen on?",
            f"What database does the {name} service use?",
        ]
    )
    return "service", text, q


def _person(r: random.Random, name: str) -> Fact:
    who = f"{r.choice(NAMES)} {name.capitalize()}"
    text = f"{who} is a {r.choice(ROLES)} on the {r.choice(TEAMS)} team."
    q = r.choice([f"Which team is {who} on?", f"What is {who}'s role?"])
    return "person", text, q


def _pet(r: random.Random, name: str) -> Fact:
    pet = name.capitalize()
    text = (
        f"{r.choice(NAMES)}'s {r.choice(SPECIES)} is called {pet} and sleeps in the"
        f" {r.choice(PET_PLACES)}."
    )
    q = r.choice([f"What kind of animal is {pet}?", f"Who owns the pet called {pet}?"])
    return "pet", text, q


def _deployment(r: random.Random, name: str) -> Fact:
    text = f"The {name} deployment runs version {r.choice(VERSIONS)} in {r.choice(REGIONS)}."
    q = r.choice(
        [
            f"Which version is the {name} deployment running?",
            f"Which region is the {name} deployment in?",
        ]
    )
    return "deployment", text, q


def _host(r: random.Random, name: str) -> Fact:
    host = f"{name}-{r.randint(1, 12):02d}"
    text = f"The host {host} in rack {r.randint(1, 9)} is used for {r.choice(PURPOSES)}."
    q = r.choice([f"What is the host {host} used for?", f"Which rack is the host {host} in?"])
    return "host", text, q


def _room(r: random.Random, name: str) -> Fact:
    room = name.capitalize()
    text = (
        f"Meeting room {room} is on floor {r.randint(1, 9)} and seats"
        f" {r.choice((4, 6, 8, 10, 12))} people."
    )
    q = r.choice(
        [f"Which floor is meeting room {room} on?", f"How many people fit in meeting room {room}?"]
    )
    return "room", text, q


def _project(r: random.Random, name: str) -> Fact:
    project = name.capitalize()
    text = f"Project {project} is led by {r.choice(NAMES)} and ships in {r.choice(MONTHS)}."
    q = r.choice([f"Who leads project {project}?", f"When does project {project} ship?"])
    return "project", text, q


TEMPLATES: tuple[Callable[[random.Random, str], Fact], ...] = (
    _repo,
    _service,
    _person,
    _pet,
    _deployment,
    _host,
    _room,
    _project,
)


def _reserved_words() -> set[str]:
    """Every word of the templates and pools, lowercased: no name may be (or stem like) one."""
    r = random.Random(0)
    text = " ".join(
        [
            *NAMES,
            *TEAMS,
            *LANGUAGES,
            *RULES,
            *DATABASES,
            *ROLES,
            *SPECIES,
            *PET_PLACES,
            *REGIONS,
            *PURPOSES,
            *MONTHS,
            *(" ".join(t(r, "x")[1:]) for t in TEMPLATES),
        ]
    )
    return {w.lower() for w in re.findall(r"\w+", text)}


def make_facts(count: int, seed: int) -> list[Fact]:
    """``count`` distinct facts, each about its own named thing, deterministic from ``seed``."""
    r = random.Random(seed)
    names = unique_names(count, r, _reserved_words())
    facts = [TEMPLATES[r.randrange(len(TEMPLATES))](r, name) for name in names]
    assert len({text for _, text, _ in facts}) == count
    return facts


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


def write_facts(
    base_url: str, facts: list[Fact], single: int, batch: int, label: str
) -> tuple[list[str | None], list[str | None], dict[str, Any]]:
    """Singles then batches into one container: each fact's memory id and status (None where
    the request failed), and the figures of both phases."""
    ids: list[str | None] = [None] * len(facts)
    statuses: list[str | None] = [None] * len(facts)
    figures: dict[str, Any] = {}
    single = min(single, len(facts))
    with client(base_url) as http:
        phases = [("single", [[n] for n in range(single)])]
        starts = range(single, len(facts), batch)
        phases.append(("batch", [list(range(s, min(s + batch, len(facts)))) for s in starts]))
        for phase, requests in phases:
            if not requests:
                continue
            bodies = [
                {"containerTag": CONTAINER, "memories": [{"content": facts[n][1]} for n in ns]}
                for ns in requests
            ]
            latencies: list[float] = []
            errors = 0
            total = sum(len(ns) for ns in requests)
            report_every = max(1, len(requests) // 10)
            done = 0
            began = time.perf_counter()
            for k, (ns, body) in enumerate(zip(requests, bodies, strict=True)):
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
                for n, outcome in zip(ns, response.json()["memories"], strict=True):
                    ids[n], statuses[n] = outcome["id"], outcome["status"]
                if (k + 1) % report_every == 0:
                    elapsed = time.perf_counter() - began
                    progress(f"  {label}: {phase} writes {done:,}/{total:,} in {elapsed:.0f} s")
            elapsed = time.perf_counter() - began
            counts = Counter(statuses[n] for ns in requests for n in ns if statuses[n])
            acknowledged = sum(counts.values())
            figures[phase] = {
                "memories": acknowledged,
                "requests": len(requests),
                "per_request": len(requests[0]),
                "seconds": elapsed,
                "per_s": acknowledged / elapsed if elapsed else 0.0,
                "statuses": {s: counts.get(s, 0) for s in STATUSES},
                "errors": errors,
                **latency_summary(latencies),
            }
    return ids, statuses, figures


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
            http.post("/search", json={"q": facts[n][2], "containerTag": CONTAINER})
        for k, n in enumerate(asked):
            body = {"q": facts[n][2], "containerTag": CONTAINER, "limit": SEARCH_LIMIT}
            t0 = time.perf_counter()
            try:
                response = http.post("/search", json=body)
            except TransportError:
                errors += 1
                ranks[n] = None
                continue
            latencies.append(time.perf_counter() - t0)
            if response.status_code != 200:
                errors += 1
                ranks[n] = None
                continue
            results = response.json()["results"]
            ranks[n] = next(
                (
                    i
                    for i, hit in enumerate(results)
                    if hit.get("id") == ids[n] and hit.get("content") == facts[n][1]
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


# --- the baseline -----------------------------------------------------------------------------


def fts5_ranks(facts: list[Fact], asked: list[int]) -> tuple[dict[int, int | None], dict[str, Any]]:
    """An in-memory FTS5 table of the facts (porter unicode61); each question's words OR-ed,
    quoted, ranked by bm25: the rank of the fact's own row (None: not in the top 10)."""
    db = sqlite3.connect(":memory:")
    t0 = time.perf_counter()
    db.execute("CREATE VIRTUAL TABLE facts USING fts5(content, tokenize='porter unicode61')")
    db.executemany(
        "INSERT INTO facts(rowid, content) VALUES (?, ?)",
        ((n + 1, text) for n, (_, text, _) in enumerate(facts)),
    )
    db.commit()
    build = time.perf_counter() - t0
    ranks: dict[int, int | None] = {}
    latencies: list[float] = []
    for n in asked:
        words = dict.fromkeys(w.lower() for w in re.findall(r"\w+", facts[n][2]))
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


def bench_run(workdir: Path, tier: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    label = f"{tier} {size:,}"
    single = min(args.single, size)
    run: dict[str, Any] = {"tier": tier, "size": size, "single": single, "batch": args.batch}
    progress(f"{label}: making {size:,} facts")
    facts = make_facts(size, args.seed)
    sample = sample_queries(size, single, args.queries, args.seed)
    asked = sample["single"] + sample["batch"]
    weights = {"single": single / size, "batch": (size - single) / size}
    data_dir = workdir / f"{tier}-{size}"
    server = Server(data_dir, server_env(tier, args.model_cache_dir), workdir / f"{label}.log")
    started = time.perf_counter()
    try:
        run["boot_s"] = server.start()
        first_search(server.base_url, CONTAINER)  # loads the tier's model before the writes
        progress(f"{label}: server up (pid {server.pid}) in {run['boot_s']:.1f} s, writing")
        ids, statuses, run["writes"] = write_facts(
            server.base_url, facts, single, args.batch, label
        )
        progress(f"{label}: searching {len(asked):,} questions")
        ranks, run["search"] = search_facts(server.base_url, facts, ids, asked, label)
        run["stop"] = server.stop()
    except Exception as exc:  # a crashed or refusing server is reported, not raised
        run["error"] = f"{type(exc).__name__}: {exc}"
        progress(f"{label}: failed: {run['error']}\n{server.log_tail()}")
        return run
    finally:
        server.kill()
        shutil.rmtree(data_dir, ignore_errors=True)
    run["server_seconds"] = time.perf_counter() - started
    served = served_facts(ids)
    run["served"] = {
        "facts": sum(served),
        "share": sum(served) / size,
        "hidden_asked_missed_at_10": sum(not served[n] and ranks[n] is None for n in asked),
        "served_asked_missed_at_10": sum(served[n] and ranks[n] is None for n in asked),
    }
    run["mnemolog"] = hit_rates(ranks, sample, weights)
    progress(f"{label}: FTS5 baseline")
    fts, run["fts5"] = fts5_ranks(facts, asked)
    run["fts5"].update(hit_rates(fts, sample, weights))
    by_template: dict[str, dict[str, Any]] = {}
    for n, (template, _, _) in enumerate(facts):
        t = by_template.setdefault(template, {"facts": 0, "superseded": 0, "asked": 0, "hit10": 0})
        t["facts"] += 1
        t["superseded"] += statuses[n] == "superseded"
    for n in asked:
        t = by_template[facts[n][0]]
        t["asked"] += 1
        t["hit10"] += ranks[n] is not None
    run["templates"] = by_template
    run["goal_hit10"] = {"target": GOAL_HIT10, "met": run["mnemolog"]["all"]["hit10"] >= GOAL_HIT10}
    return run


# --- the report -------------------------------------------------------------------------------


def _pct(part: float, whole: float) -> str:
    return f"{part * 100 / whole:.1f}%" if whole else "-"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def render_run(run: dict[str, Any]) -> list[str]:
    head = (
        f"{run['tier']} tier, {run['size']:,} distinct facts in one container"
        f" ({run['single']:,} single-memory writes, then batches of {run['batch']})"
    )
    if "wall_seconds" in run:
        head += f", run took {run['wall_seconds']:.0f} s"
    if "error" in run:
        return [head, f"  FAILED: {run['error']}"]
    lines = [head]
    lines.append(
        f"  {'writes':<16}{'memories':>9}{'per s':>8}{'p50 ms':>8}{'p95 ms':>8}"
        f"  {'created':>15}{'superseded':>15}{'deduplicated':>15}{'errors':>7}"
    )
    for phase, w in run["writes"].items():
        name = "single" if phase == "single" else f"batches of {w['per_request']}"
        st = w["statuses"]
        cells = "".join(f"{st[s]:>7,} {_pct(st[s], w['memories']):>7}" for s in STATUSES)
        lines.append(
            f"  {name:<16}{w['memories']:>9,}{w['per_s']:>8,.0f}{_ms(w['p50_ms']):>8}"
            f"{_ms(w['p95_ms']):>8}  {cells}{w['errors']:>7}"
        )
    sv, s = run["served"], run["search"]
    lines.append(
        f"  facts still served (their chain's latest version is their own text):"
        f" {sv['facts']:,} of {run['size']:,} ({_pct(sv['facts'], run['size'])}); the server"
        f" reports {s['live_memories_reported']:,} live memories"
    )
    m, f = run["mnemolog"], run["fts5"]
    parts = [p for p in ("single", "batch", "all") if p in m]
    titles = {
        "single": f"single (n={m.get('single', {}).get('n', 0)})",
        "batch": f"batched (n={m.get('batch', {}).get('n', 0)})",
        "all": "all facts (weighted)",
    }
    lines.append(f"  {'recall':<22}" + "".join(f"{titles[p]:>22}" for p in parts))
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
    lines.append(
        f"  mnemolog misses at 10: {sv['hidden_asked_missed_at_10']} of hidden facts,"
        f" {sv['served_asked_missed_at_10']} of facts still served"
    )
    lines.append(
        "  by template, superseded % / mnemolog hit@10: "
        + ", ".join(
            f"{name} {_pct(t['superseded'], t['facts'])} / {_pct(t['hit10'], t['asked'])}"
            for name, t in sorted(run["templates"].items())
        )
    )
    goal = run["goal_hit10"]
    lines.append(
        f"  goal mnemolog hit@10 >= {goal['target']}: {'met' if goal['met'] else 'NOT met'}"
        f" ({m['all']['hit10']:.3f}; FTS5 {f['all']['hit10']:.3f})"
    )
    return lines


def render(report: dict[str, Any]) -> str:
    env = report["environment"]
    lines = [
        "mnemolog: distinct templated facts, written and recalled through the REST API",
        f"  {env['cpus']} CPUs  |  Python {env['python']}  |  SQLite {env['sqlite']}  |  seed"
        f" {report['seed']}  |  {report['queries']} questions a run  |  load average before"
        f" {env['load_average_before']}, after {env['load_average_after']}",
    ]
    if env["pythonpath"]:
        lines.append(f"  server code from PYTHONPATH={env['pythonpath']}")
    for run in report["runs"]:
        lines += ["", *render_run(run)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiers", default=None, help="embedder tiers (default fast,quality)")
    parser.add_argument("--sizes", default=None, help="facts per run (default 10000,100000)")
    parser.add_argument("--single", type=int, default=2000, help="facts written one by one")
    parser.add_argument("--batch", type=int, default=500, help="memories per batched request")
    parser.add_argument("--queries", type=int, default=None, help="questions (default 1000)")
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
    parser.add_argument("--quick", action="store_true", help="2000 facts, 500 questions, fast")
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
    if min(sizes) < 1 or args.queries < 1 or args.single < 0 or not 1 <= args.batch <= 1000:
        parser.error("sizes and --queries must be positive, --single >= 0, --batch 1 to 1000")
    if not MNEMOLOG.exists():
        parser.error(f"{MNEMOLOG} not found: run from the project's virtualenv")

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
