"""Every recall configuration the product offers, measured in one command and written as one
table: ``bench/retrieval.py --configurations [--write docs/benchmarks.md]``.

Each embedder tier runs in a child ``retrieval.py --json`` of its own (a tier is one process's
choice of model), with the rerank pools of the agent-facing default and of a REST
``rerank: true``; the rows are then read side by side: recall_all@5, NDCG@10 and hit@1 on both
dev shares against the strongest BM25 line of the same questions, and the p50 and p95 of each
stage of the search as its trace timed it, on LoCoMo. The pool table says what each pool size
lets the reranker see. ``--write`` puts both tables between the ``retrieval-configurations``
markers of the page. ``--reports FILE`` keeps the children's reports in FILE, and when FILE
exists, writes its tables up again without measuring.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from retrieval import POOL_KS, POOL_LINES
from sections import write_section

from mnemolog.settings import Settings

HERE = Path(__file__).resolve().parent
AGENT_POOL = Settings().agent_rerank_pool
REST_POOL = Settings().rerank_pool
SECTION = "retrieval-configurations"
# (tier, line key, configuration, where it serves)
ROWS: tuple[tuple[str, str, str, str], ...] = (
    ("fast", "turn/bm25-stemmed", "BM25, stop words + stemming", "baseline"),
    ("fast", "turn", "fast tier", "REST default"),
    ("fast", f"turn/rerank{AGENT_POOL}", f"fast tier + rerank, pool {AGENT_POOL}", "agent default"),
    ("fast", f"turn/rerank{REST_POOL}", f"fast tier + rerank, pool {REST_POOL}", "`rerank: true`"),
    ("quality", "turn", "quality tier", "opt-in"),
    ("quality", f"turn/rerank{AGENT_POOL}", f"quality tier + rerank, pool {AGENT_POOL}", "opt-in"),
    ("quality", f"turn/rerank{REST_POOL}", f"quality tier + rerank, pool {REST_POOL}", "opt-in"),
)
# The trace's stages (``Stopwatch`` laps of ``Recall.search``) and their column names; *fuse*
# is everything after the indexes answered but the rerank: fusion, MMR and the ordering rules.
STAGES = (
    ("embed", "embed"),
    ("memory_vector", "vector"),
    ("memory_bm25", "BM25"),
    ("rerank", "rerank"),
    ("fuse", "fuse"),
    ("total", "total"),
)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """One child run per tier; their JSON reports by tier."""
    reports: dict[str, Any] = {}
    for tier in args.configuration_tiers.split(","):
        command = [
            sys.executable,
            str(HERE / "retrieval.py"),
            "--tier",
            tier,
            "--rerank",
            "--rerank-pool",
            f"{AGENT_POOL},{REST_POOL}",
            "--json",
            "--data",
            str(args.data),
        ]
        if args.limit_conversations is not None:
            command += ["--limit-conversations", str(args.limit_conversations)]
        command += ["--limit-questions", str(args.limit_questions or args.configuration_questions)]
        print(f"retrieval, {tier} tier: {' '.join(command[1:])}", file=sys.stderr)
        done = subprocess.run(command, stdout=subprocess.PIPE, check=True, text=True)
        reports[tier] = json.loads(done.stdout)
    return reports


def _line(report: dict[str, Any], dataset: str, key: str) -> dict[str, Any] | None:
    figures = report["datasets"].get(dataset)
    if figures is None:
        return None
    for line in figures["baselines"]["lines"]:
        if line["line"] == key:
            return dict(line)
    return None


def _cells(line: dict[str, Any] | None) -> list[str]:
    if line is None:
        return ["", "", ""]
    margin = line["margin_recall_all@5"]
    return [
        f"{line['recall_all@5']:.3f} ({margin:+.3f})",
        f"{line['ndcg@10']:.3f}",
        f"{line['hit@1']:.3f}",
    ]


def _stages(report: dict[str, Any], key: str) -> list[str]:
    timed = report["datasets"].get("locomo", {}).get("stage_ms", {}).get(key)
    if not timed:
        return ["" for _ in STAGES]
    cells = []
    for stage, _ in STAGES:
        figure = timed.get(stage)
        cells.append("" if figure is None else f"{figure['p50']:.1f} / {figure['p95']:.1f}")
    return cells


def tables(reports: dict[str, Any]) -> str:
    """The configurations table and the pool table, as Markdown."""
    fast = reports.get("fast") or next(iter(reports.values()))
    first, last = next(iter(reports.values())), list(reports.values())[-1]
    loc = fast["datasets"].get("locomo", {})
    lme = fast["datasets"].get("longmemeval", {})
    lines = [
        "## Every recall configuration",
        "",
        f"Measured by `bench/retrieval.py --configurations` at {fast['code']}: LoCoMo dev "
        f"({loc.get('containers', 0)} conversations), LongMemEval_S dev "
        f"({lme.get('containers', 0)} questions' haystacks, user turns), each tier in a "
        "process of its own. Margins are over the strongest BM25 line on the same questions. "
        "Stage times are each search's own trace on LoCoMo (ms, p50 / p95; *total* is the "
        "whole call, the trace's durable append included), on this 2-core machine (load "
        f"average {first['load_average']['start']:.1f} at the start, "
        f"{last['load_average']['end']:.1f} at the end).",
        "",
        "| configuration | serves | LoCoMo recall_all@5 (over BM25) | NDCG@10 | hit@1 "
        "| LongMemEval recall_all@5 (over BM25) | NDCG@10 | hit@1 | "
        + " | ".join(name for _, name in STAGES)
        + " |",
        "|---|---|" + "---:|" * (6 + len(STAGES)),
    ]
    for tier, key, name, serves in ROWS:
        report = reports.get(tier)
        if report is None:
            continue
        cells = [name, serves]
        cells += _cells(_line(report, "locomo", key))
        cells += _cells(_line(report, "longmemeval", key))
        cells += _stages(report, key) if key != "turn/bm25-stemmed" else ["" for _ in STAGES]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "The pool, fast tier: recall_all (and recall) of the first k of each list, that is what "
        "a reranker of pool k could put first. *Neighbouring turns* places after each fused "
        "candidate the turns written just before and after it in its session.",
        "",
        "| list | dataset | " + " | ".join(f"k={k}" for k in POOL_KS) + " |",
        "|---|---|" + "---:|" * len(POOL_KS),
    ]
    for dataset, label in (("locomo", "LoCoMo"), ("longmemeval", "LongMemEval")):
        levels = fast["datasets"].get(dataset, {}).get("levels", {})
        for key, name in POOL_LINES:
            row = levels.get(key, {}).get("ALL")
            if row is None:
                continue
            cells = [f"{row[f'recall_all@{k}']:.3f} ({row[f'recall@{k}']:.3f})" for k in POOL_KS]
            lines.append(f"| {name} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    if args.reports is not None and args.reports.exists():
        reports = json.loads(args.reports.read_text(encoding="utf-8"))  # written up again
    else:
        reports = measure(args)
        if args.reports is not None:
            args.reports.write_text(json.dumps(reports), encoding="utf-8")
    body = tables(reports)
    print(body)
    if args.write is not None:
        write_section(args.write, SECTION, body)
    return 0
