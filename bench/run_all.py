"""Every benchmark in one run, written up as ``docs/benchmarks.md`` with its plots.

Runs, each script in a child process of its own with ``--json`` (their progress goes to
stderr as they work), for every embedder tier the product offers (``mnemolog.embedding.TIERS``
less ``auto``, or ``--tiers``):

- the machine: CPU model, cores, RAM, Python and package versions, and the raw fsync latency
  of the disk under ``--dir``, measured at the start and at the end of this run;
- retrieval quality (``retrieval.py``): LoCoMo and LongMemEval_S dev, every baseline line on
  the same turns, the abstention AUROC, and on LoCoMo with the product's default tier the
  rerank pool sweep (quality and cost per pool);
- speed through the REST API (``recall.py``) at each store size, ``--repeats`` times;
- the proxy's added latency (``proxy.py``), ``--repeats`` times;
- the audit probes (``audit.py``): trace fidelity over scripted proxied turns for each tier,
  and capture safety over the secrets corpus.

Every seed is fixed (the scripts' own). Quality figures are deterministic for one code and
data, so they are measured once; speed figures are given as the median and the range (min to
max) over the repeats. Nothing is asserted: goals are printed as met or not met.

    .venv/bin/python bench/run_all.py                 # everything: about an hour on 2 cores
    .venv/bin/python bench/run_all.py --quick         # small limits: under 5 minutes
    .venv/bin/python bench/run_all.py --tiers fast --out /tmp/b.md --plots /tmp/b

``--quick`` uses one LoCoMo conversation, three LongMemEval questions (and three abstention
ones), a 1k store, one repeat, 60 proxied turns a tier and the whole secrets corpus.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from log_append import probe_sync
from retrieval import TOP_SCORES

from mnemolog.embedding import TIERS, choose_tier

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_OUT = REPO / "docs" / "benchmarks.md"
DEFAULT_PLOTS = REPO / "docs" / "benchmarks"
DEFAULT_DATA = REPO.parent / "shared" / "bench-data"
PRODUCT_TIERS = tuple(t for t in TIERS if t != "auto")
DEFAULT_TIER = choose_tier("auto", None)
PACKAGES = (
    "mnemolog",
    "numpy",
    "onnxruntime",
    "tokenizers",
    "model2vec",
    "tantivy",
    "lmdb",
    "msgspec",
    "fastapi",
    "uvicorn",
    "httpx",
    "matplotlib",
)
LOCOMO_CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain", "ALL")


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# --- the machine ----------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram = int(line.split()[1]) * 1024
    except OSError:
        pass
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "ram_bytes": ram,
        "os": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "packages": versions,
        "revision": revision(),
    }


def revision() -> str:
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


# --- the scripts ------------------------------------------------------------------------------


def run_script(name: str, args: Sequence[str], label: str) -> dict[str, Any]:
    """``bench/<name> <args> --json`` in a child process; its stderr (progress) passes through.
    A failed run is reported with its exit code, not raised."""
    command = [sys.executable, str(HERE / name), *args, "--json"]
    progress(f"{label}: {' '.join(command[1:])}")
    started = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    seconds = time.perf_counter() - started
    progress(f"{label}: done in {seconds:.0f} s (exit {done.returncode})")
    if done.returncode != 0:
        return {"error": f"exit {done.returncode}", "wall_s": seconds}
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        return {"error": f"unreadable output: {exc}", "wall_s": seconds}
    report["wall_s"] = seconds
    return report


def retrieval(args: argparse.Namespace) -> dict[str, Any]:
    """Per tier and dataset; the pool sweep on LoCoMo for the default (or first) tier."""
    sweep_tier = DEFAULT_TIER if DEFAULT_TIER in args.tiers else args.tiers[0]
    out: dict[str, Any] = {"sweep_tier": sweep_tier, "pools": args.pools, "runs": {}}
    for tier in args.tiers:
        for dataset in ("locomo", "longmemeval"):
            options = ["--tier", tier, "--dataset", dataset, "--data", str(args.data)]
            options += ["--rerank"]
            if dataset == "locomo" and tier == sweep_tier:
                options += ["--rerank-pool", ",".join(str(p) for p in args.pools)]
            if args.limit_conversations is not None:
                options += ["--limit-conversations", str(args.limit_conversations)]
            limit = args.tier_limit_questions.get(tier, args.limit_questions)
            if limit is not None:
                options += ["--limit-questions", str(limit)]
            if args.questions_per_conversation is not None:
                options += ["--questions-per-conversation", str(args.questions_per_conversation)]
            if args.dir is not None:
                options += ["--dir", str(args.dir)]
            out["runs"][f"{tier}/{dataset}"] = run_script(
                "retrieval.py", options, f"retrieval, {dataset}, {tier} tier"
            )
    return out


def speed(args: argparse.Namespace) -> list[dict[str, Any]]:
    repeats = []
    for n in range(args.repeats):
        options = ["--tiers", ",".join(args.tiers), "--sizes", ",".join(map(str, args.sizes))]
        options += ["--seconds", str(args.write_seconds), "--queries", str(args.queries)]
        options += ["--dir", str(args.dir or ".")]
        repeats.append(run_script("recall.py", options, f"speed, repeat {n + 1}/{args.repeats}"))
    return repeats


def proxy(args: argparse.Namespace) -> list[dict[str, Any]]:
    return [
        run_script(
            "proxy.py",
            ["--turns", str(args.proxy_turns), "--warmup", str(min(20, args.proxy_turns))],
            f"proxy, repeat {n + 1}/{args.repeats}",
        )
        for n in range(args.repeats)
    ]


def audit(args: argparse.Namespace) -> dict[str, Any]:
    # The default tier first: capture safety runs on the first tier given.
    ordered = sorted(args.tiers, key=lambda tier: tier != DEFAULT_TIER)
    options = [f"--tier={tier}" for tier in ordered]
    options += ["--turns", str(args.audit_turns), "--data", str(args.data)]
    if args.dir is not None:
        options += ["--dir", str(args.dir)]
    return run_script("audit.py", options, "audit probes")


def fsync_probe(directory: Path, count: int, label: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mnemolog-bench-fsync-", dir=directory) as tmp:
        return probe_sync(Path(tmp), count, label)


# --- aggregation ------------------------------------------------------------------------------


def spread(values: Sequence[float | None]) -> dict[str, float | int | None]:
    """Median, min and max of the values that were measured (None ones are failed runs)."""
    seen = [v for v in values if v is not None]
    if not seen:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": statistics.median(seen), "min": min(seen), "max": max(seen), "n": len(seen)}


SPEED_FIGURES: tuple[tuple[str, str, Callable[[dict[str, Any]], float | None]], ...] = (
    ("ingest_per_s", "batched ingest, memories/s", lambda r: r["ingest"]["per_s"]),
    ("search_p50_ms", "search p50, ms", lambda r: r["search"]["p50_ms"]),
    ("search_p95_ms", "search p95, ms", lambda r: r["search"]["p95_ms"]),
    (
        "writes1_per_s",
        "1 writer, writes/s",
        lambda r: next(w["per_s"] for w in r["writes"] if w["writers"] == 1),
    ),
    (
        "writes8_per_s",
        "8 writers, writes/s",
        lambda r: next(w["per_s"] for w in r["writes"] if w["writers"] == 8),
    ),
    (
        "writes8_p99_ms",
        "8 writers, p99 ms",
        lambda r: next(w["p99_ms"] for w in r["writes"] if w["writers"] == 8),
    ),
    ("boot_s", "boot on the store, s", lambda r: r["boot_s"]),
    ("rebuild_s", "rebuild, s", lambda r: r["rebuild"]["seconds"]),
)


def _get(run: dict[str, Any], pick: Callable[[dict[str, Any]], float | None]) -> float | None:
    try:
        value = pick(run)
    except (KeyError, StopIteration, TypeError):
        return None
    return None if value is None else float(value)


def speed_table(repeats: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per tier and size: each figure's spread over the repeats."""
    keys: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for report in repeats:
        for run in report.get("runs", []):
            keys.setdefault((run["tier"], run["size"]), []).append(run)
    rows = []
    for (tier, size), runs in keys.items():
        row: dict[str, Any] = {
            "tier": tier,
            "size": size,
            "errors": [r["error"] for r in runs if "error" in r],
        }
        for key, _, pick in SPEED_FIGURES:
            row[key] = spread([_get(r, pick) for r in runs])
        rows.append(row)
    return rows


def proxy_table(repeats: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cases: dict[str, list[dict[str, Any]]] = {}
    for report in repeats:
        for case, figures in report.get("cases", {}).items():
            cases.setdefault(case, []).append(figures)
    return [
        {
            "case": case,
            "direct_p50_ms": spread([r["direct"]["p50_ms"] for r in runs]),
            "proxy_p50_ms": spread([r["proxy"]["p50_ms"] for r in runs]),
            "added_p50_ms": spread([r["added_p50_ms"] for r in runs]),
            "added_p95_ms": spread([r["added_p95_ms"] for r in runs]),
        }
        for case, runs in cases.items()
    ]


# --- plots ------------------------------------------------------------------------------------


def plots(report: dict[str, Any], folder: Path) -> dict[str, Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    made: dict[str, Path] = {}

    # Latency against store size, per tier: search p50 and p95 (median, range as error bars).
    rows = report["speed"]["table"]
    if rows:
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for tier in sorted({r["tier"] for r in rows}):
            mine = sorted((r for r in rows if r["tier"] == tier), key=lambda r: r["size"])
            for ax, key, name in (
                (axes[0], "search_p50_ms", "search p50"),
                (axes[1], "ingest_per_s", "batched ingest"),
            ):
                sizes = [r["size"] for r in mine if r[key]["median"] is not None]
                mids = [r[key]["median"] for r in mine if r[key]["median"] is not None]
                low = [
                    m - r[key]["min"]
                    for m, r in zip(
                        mids, [r for r in mine if r[key]["median"] is not None], strict=True
                    )
                ]
                high = [
                    r[key]["max"] - m
                    for m, r in zip(
                        mids, [r for r in mine if r[key]["median"] is not None], strict=True
                    )
                ]
                ax.errorbar(
                    sizes, mids, yerr=[low, high], marker="o", capsize=3, label=f"{tier} tier"
                )
                ax.set_title(name)
        axes[0].set_ylabel("ms (median; bars: min to max)")
        axes[1].set_ylabel("memories/s (median; bars: min to max)")
        for ax in axes:
            ax.set_xlabel("memories in the store")
            ax.set_xscale("log")
            ax.grid(True, alpha=0.3)
            ax.legend()
        fig.suptitle(f"REST API, {report['speed']['repeats']} repeat(s) per point")
        fig.tight_layout()
        made["latency"] = folder / "latency_by_store_size.png"
        fig.savefig(made["latency"], dpi=110)
        plt.close(fig)

    # Recall per LoCoMo category: recall_all@5 of every line, one panel per tier.
    locomo = {
        tier: run
        for key, run in report["retrieval"]["runs"].items()
        for tier, dataset in [key.split("/")]
        if dataset == "locomo" and "datasets" in run
    }
    if locomo:
        fig, axes = plt.subplots(1, len(locomo), figsize=(6.5 * len(locomo), 4.2), squeeze=False)
        for ax, (tier, run) in zip(axes[0], locomo.items(), strict=True):
            figures = run["datasets"]["locomo"]
            levels = figures["levels"]
            lines = [
                line
                for line in figures["baselines"]["lines"]
                if not line["line"].startswith("turn/rerank")
                or line["line"] == f"turn/rerank{product_pool(figures)}"
            ]
            categories = [c for c in LOCOMO_CATEGORIES if c in levels["turn"]]
            width = 0.8 / len(lines)
            for i, line in enumerate(lines):
                values = [levels[line["line"]][c]["recall_all@5"] for c in categories]
                xs = [n + i * width for n in range(len(categories))]
                ax.bar(xs, values, width, label=line["label"])
            ax.set_xticks([n + 0.4 - width / 2 for n in range(len(categories))])
            ax.set_xticklabels([f"{c}\n(n={int(levels['turn'][c]['n'])})" for c in categories])
            ax.set_ylabel("recall_all@5")
            ax.set_ylim(0, 1)
            ax.set_title(f"LoCoMo dev, {tier} tier")
            ax.grid(True, axis="y", alpha=0.3)
        axes[0][0].legend(fontsize=7, loc="upper left")
        fig.tight_layout()
        made["categories"] = folder / "locomo_recall_by_category.png"
        fig.savefig(made["categories"], dpi=110)
        plt.close(fig)

    # Quality against rerank pool size, with its cost in the benchmark's process.
    sweep = report["retrieval"]["runs"].get(f"{report['retrieval']['sweep_tier']}/locomo", {})
    if "datasets" in sweep:
        figures = sweep["datasets"]["locomo"]
        lines = {line["line"]: line for line in figures["baselines"]["lines"]}
        pools = sorted(int(p) for p in figures["rerank_search_ms"])
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for metric, name in (("recall_all@5", "recall_all@5"), ("ndcg@10", "NDCG@10")):
            ax.plot(
                pools,
                [lines[f"turn/rerank{p}"][metric] for p in pools],
                marker="o",
                label=f"rerank, {name}",
            )
            ax.axhline(
                lines["turn"][metric],
                linestyle="--",
                linewidth=1,
                label=f"hybrid, no rerank, {name}",
            )
        strongest = figures["baselines"]["strongest_bm25"]
        ax.axhline(
            lines[strongest]["recall_all@5"],
            color="grey",
            linestyle=":",
            label="strongest BM25, recall_all@5",
        )
        ax.set_xlabel("rerank pool (candidates the cross-encoder scores)")
        ax.set_ylabel("LoCoMo dev, ALL")
        ax.set_xticks(pools)
        ax.grid(True, alpha=0.3)
        cost = ax.twinx()
        cost.plot(
            pools,
            [figures["rerank_search_ms"][str(p)]["p50_ms"] for p in pools],
            color="black",
            marker="s",
            linewidth=1,
            label="search p50, ms",
        )
        cost.set_ylabel("reranked search p50, ms (in the benchmark's process)")
        handles = ax.get_legend_handles_labels()
        extra = cost.get_legend_handles_labels()
        ax.legend(handles[0] + extra[0], handles[1] + extra[1], fontsize=7, loc="lower right")
        ax.set_title(
            f"Quality and cost against rerank pool size ({report['retrieval']['sweep_tier']} tier)"
        )
        fig.tight_layout()
        made["pool"] = folder / "rerank_pool.png"
        fig.savefig(made["pool"], dpi=110)
        plt.close(fig)
    return made


def product_pool(figures: dict[str, Any]) -> int | None:
    from mnemolog.memory.recall.ranking import RERANK_POOL

    pools = [int(p) for p in figures["rerank_search_ms"]]
    if not pools:
        return None
    return RERANK_POOL if RERANK_POOL in pools else pools[0]


# --- the page ---------------------------------------------------------------------------------


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _spread(s: dict[str, Any], digits: int = 2) -> str:
    if s["median"] is None:
        return "failed"
    if s["n"] == 1:
        return _num(s["median"], digits)
    return f"{_num(s['median'], digits)} [{_num(s['min'], digits)}\u2013{_num(s['max'], digits)}]"


def _rel(path: Path, page: Path) -> str:
    return os.path.relpath(path, page.parent).replace(os.sep, "/")


def kept_sections(page: Path) -> str:
    """The sections other scripts write into the page between their markers (``<!-- name -->``
    ... ``<!-- /name -->``, as ``bench/scale.py`` does), carried over when it is rewritten."""
    if not page.exists():
        return ""
    text = page.read_text(encoding="utf-8")
    return "".join(
        f"\n{match.group(0)}\n"
        for match in re.finditer(r"<!-- ([\w.]+) -->\n.*?<!-- /\1 -->", text, flags=re.DOTALL)
    )


def render(report: dict[str, Any], page: Path, made: dict[str, Path]) -> str:
    m = report["machine"]
    quick = report["quick"]
    out = [
        "# Benchmarks",
        "",
        f"Written by `{report['command']}` on {report['date']}, in"
        f" {report['total_s'] / 60:.0f} minutes:"
        " every figure on this page comes from that one run, on the machine below. `make bench`"
        " runs it in full and writes this page; [bench/README.md](../bench/README.md) says what"
        " each script measures.",
        "",
    ]
    if quick:
        out += [
            "**This is a `--quick` run** (small limits: "
            f"{report['limits']}). Its figures show that every benchmark runs; they are not"
            " the project's figures.",
            "",
        ]
    for tier, n in report.get("tier_limit_questions", {}).items():
        out += [
            f"LongMemEval_S on the {tier} tier was run on its first {n} answerable questions"
            f" (and first {n} abstention ones) only, to keep the run's length in hand; every"
            " other figure uses the whole development share.",
            "",
        ]
    out += [
        "Quality figures (retrieval, abstention, the audit probes) are deterministic for one"
        " code, model and data, so they are measured once. Speed figures are the median over"
        f" {report['repeats']} repeat(s), with the range (min to max) in brackets; the machine is"
        " shared, so they are noisy. Seeds are fixed: the synthetic stores, queries and scripted"
        " turns are the same in every run.",
        "",
        "## Machine",
        "",
        "| | |",
        "|---|---|",
        f"| CPU | {m['cpu']} |",
        f"| cores | {m['cores']} (usable by this process: {m['affinity']}) |",
        f"| RAM | {_num((m['ram_bytes'] or 0) / 2**30, 1)} GiB |",
        f"| OS | {m['os']} |",
        f"| Python | {m['python']} |",
        f"| code | {m['revision']} |",
        f"| embedder tiers | {', '.join(report['tiers'])} (product default: {DEFAULT_TIER}) |",
        "| packages | " + ", ".join(f"{k} {v}" for k, v in m["packages"].items()) + " |",
        f"| load average | {report['load'][0]:.1f} at the start, {report['load'][1]:.1f} at the"
        " end |",
        "",
        "Raw disk sync latency under the benchmarks' temporary directories (4 KiB `pwrite` +"
        " `fdatasync`, the probe of `bench/log_append.py`), at the start and at the end of the"
        " run; a durable commit of the event log makes two:",
        "",
        "| probe | syncs | p50 ms | p99 ms | max ms |",
        "|---|---|---|---|---|",
    ]
    for probe in report["fsync"]:
        out.append(
            f"| {probe['label']} | {probe['count']} | {_num(probe['p50_ms'], 3)} |"
            f" {_num(probe['p99_ms'], 3)} | {_num(probe['max_ms'], 3)} |"
        )
    out += retrieval_section(report, page, made)
    out += speed_section(report, page, made)
    out += proxy_section(report)
    out += audit_section(report)
    out += ["", "## Goals", "", "| goal | value | |", "|---|---|---|"]
    for goal in report["goals"]:
        verdict = {True: "met", False: "**not met**", None: "not measured"}[goal["met"]]
        out.append(f"| {goal['goal']} | {goal['value']} | {verdict} |")
    return "\n".join(out) + "\n"


def retrieval_section(report: dict[str, Any], page: Path, made: dict[str, Path]) -> list[str]:
    r = report["retrieval"]
    out = [
        "",
        "## Retrieval quality",
        "",
        "`bench/retrieval.py`: the offline recipe of the bench data's `RECIPE.md` (section 4) on"
        " the development shares, one fresh store per LoCoMo conversation or LongMemEval"
        " question, one memory per turn, every question asked through `Recall.search`. Every"
        " line is measured in the same process on the same turns and questions:",
        "",
        "- *BM25, stop words + stemming*: tantivy BM25 over every turn with the product's"
        " analyser (English stop words, Snowball stemming); *plain BM25*: the same with"
        " tantivy's default tokenizer;",
        "- *vector only*: the dense stage of the product's own recall (its embedder and vector"
        " index), read from the trace of the default search: the candidates in their vector"
        " order;",
        "- *hybrid without recency*: the product's recall with `recency: false`;",
        "- *hybrid (default)*: the product's recall as an agent calls it (limit 10, recency"
        " and diversity on);",
        "- *hybrid + rerank*: the same with `rerank: true` (the local cross-encoder over the"
        " fused head of the pool shown).",
        "",
        "Margins are against the stronger of the two BM25 lines on the same questions.",
    ]
    for dataset, title in (
        ("locomo", "LoCoMo dev"),
        ("longmemeval", "LongMemEval_S dev (user turns)"),
    ):
        for tier in report["tiers"]:
            run = r["runs"].get(f"{tier}/{dataset}", {})
            if "datasets" not in run:
                out += ["", f"### {title}, {tier} tier", "", f"The run failed: {run.get('error')}."]
                continue
            figures = run["datasets"][dataset]
            table = figures["baselines"]
            labels = {line["line"]: line["label"] for line in table["lines"]}
            strongest = labels[table["strongest_bm25"]]
            cost = figures["rerank_search_ms"]
            store = figures["store"]
            out += [
                "",
                f"### {title}, {tier} tier",
                "",
                f"{table['lines'][0]['n']} questions over {figures['containers']} stores,"
                f" {store['turns']:,} turns ({store['superseded']} superseded,"
                f" {store['deduplicated']} deduplicated at write). Strongest BM25 line:"
                f" {strongest}.",
                "",
                "| line | recall_all@5 | NDCG@10 | hit@1 | recall_all@10 | margin recall_all@5 |"
                " margin NDCG@10 | search p50 |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for line in table["lines"]:
                pool = line["line"].removeprefix("turn/rerank")
                p50 = f"{cost[pool]['p50_ms']:.0f} ms" if pool in cost else ""
                out.append(
                    f"| {line['label']} | {line['recall_all@5']:.3f} | {line['ndcg@10']:.3f} |"
                    f" {line['hit@1']:.3f} | {line['recall_all@10']:.3f} |"
                    f" {line['margin_recall_all@5']:+.3f} | {line['margin_ndcg@10']:+.3f} | {p50} |"
                )
            if "session" in figures["levels"]:
                s, b = figures["levels"]["session"]["ALL"], figures["levels"]["session/bm25"]["ALL"]
                out += [
                    "",
                    f"Turns collapsed to sessions: recall_all@5 {s['recall_all@5']:.3f} (plain"
                    f" BM25 {b['recall_all@5']:.3f}), NDCG@10 {s['ndcg@10']:.3f}"
                    f" ({b['ndcg@10']:.3f}).",
                ]
                if "session/ku" in figures["levels"]:
                    ku = figures["levels"]["session/ku"]["ALL"]
                    out[-1] += (
                        f" Knowledge updates (n={int(ku['n'])}): the newer value above the older"
                        f" {ku['newer_above_older']:.2f}, stale only in the top 5"
                        f" {ku['stale_only@5']:.2f}."
                    )
    out += [
        "",
        "### Abstention",
        "",
        "AUROC of each line's top score, answerable questions against unanswerable ones"
        " (LoCoMo category 5, adversarial; LongMemEval's `_abs` questions), as the recipe's"
        " offline proxy for abstention: 0.5 is chance, the goal is 0.75. A search that served"
        " nothing scores lowest.",
        "",
    ]
    cols = [
        (tier, dataset)
        for dataset in ("locomo", "longmemeval")
        for tier in report["tiers"]
        if "datasets" in r["runs"].get(f"{tier}/{dataset}", {})
    ]
    if cols:
        head = []
        for tier, dataset in cols:
            found = r["runs"][f"{tier}/{dataset}"]["datasets"][dataset]["abstention"]
            name = "LoCoMo" if dataset == "locomo" else "LongMemEval_S"
            head.append(f"{name}, {tier} ({found['answerable']} / {found['unanswerable']})")
        out += ["| top score | " + " | ".join(head) + " |", "|---" * (len(cols) + 1) + "|"]
        for key, label in TOP_SCORES:
            cells = []
            for tier, dataset in cols:
                value = r["runs"][f"{tier}/{dataset}"]["datasets"][dataset]["abstention"][
                    "auroc"
                ].get(key)
                cells.append("-" if value is None else f"{value:.3f}")
            out.append(f"| {label} | " + " | ".join(cells) + " |")
    if "categories" in made:
        out += [
            "",
            "### LoCoMo by category",
            "",
            f"![recall_all@5 per LoCoMo category]({_rel(made['categories'], page)})",
        ]
    sweep = r["runs"].get(f"{r['sweep_tier']}/locomo", {})
    if "datasets" in sweep:
        figures = sweep["datasets"]["locomo"]
        lines = {line["line"]: line for line in figures["baselines"]["lines"]}
        cost = figures["rerank_search_ms"]
        out += [
            "",
            "### Rerank pool size",
            "",
            f"LoCoMo dev, {r['sweep_tier']} tier (the product's default), every question reranked"
            " at each pool size; the cost is a reranked search's latency in the benchmark's own"
            " process (embedding, both indexes, the cross-encoder over the pool, the trace's"
            " durable append), on this machine while it ran nothing else of the benchmark.",
            "",
            "| pool | recall_all@5 | NDCG@10 | hit@1 | search p50 | search p95 |",
            "|---|---|---|---|---|---|",
            f"| no rerank | {lines['turn']['recall_all@5']:.3f} | {lines['turn']['ndcg@10']:.3f} |"
            f" {lines['turn']['hit@1']:.3f} | | |",
        ]
        for pool in sorted(cost, key=int):
            line = lines[f"turn/rerank{pool}"]
            out.append(
                f"| {pool} | {line['recall_all@5']:.3f} | {line['ndcg@10']:.3f} |"
                f" {line['hit@1']:.3f} | {cost[pool]['p50_ms']:.0f} ms |"
                f" {cost[pool]['p95_ms']:.0f} ms |"
            )
        if "pool" in made:
            out += ["", f"![quality and cost against rerank pool size]({_rel(made['pool'], page)})"]
    return out


def speed_section(report: dict[str, Any], page: Path, made: dict[str, Path]) -> list[str]:
    s = report["speed"]
    out = [
        "",
        "## Speed through the REST API",
        "",
        "`bench/recall.py`: a real `mnemolog serve` per tier and store size, every request over"
        f" HTTP; {s['repeats']} repeat(s), median [min, max]. Write runs last"
        f" {report['write_seconds']:g} s each, {report['queries']} searches a store.",
        "",
        "| tier | store | " + " | ".join(name for _, name, _ in SPEED_FIGURES) + " |",
        "|---" * (len(SPEED_FIGURES) + 2) + "|",
    ]
    for row in sorted(s["table"], key=lambda r: (r["tier"], r["size"])):
        cells = [
            _spread(row[key], 0 if key.endswith("per_s") else 2) for key, _, _ in SPEED_FIGURES
        ]
        out.append(f"| {row['tier']} | {row['size']:,} | " + " | ".join(cells) + " |")
        for error in row["errors"]:
            out.append(f"| {row['tier']} | {row['size']:,} | failed: {error} |")
    if "latency" in made:
        out += [
            "",
            f"![search latency and ingest against store size]({_rel(made['latency'], page)})",
        ]
    return out


def proxy_section(report: dict[str, Any]) -> list[str]:
    rows = report["proxy"]["table"]
    out = [
        "",
        "## Proxy overhead",
        "",
        "`bench/proxy.py`: the same turns sent to the scripted upstream directly and through"
        f" `mnemolog serve` ({report['proxy_turns']} timed turns a case, {report['repeats']}"
        " repeat(s), median [min, max], ms).",
        "",
        "| case | direct p50 | proxy p50 | added p50 | added p95 |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        out.append(
            f"| {row['case']} | {_spread(row['direct_p50_ms'])} | {_spread(row['proxy_p50_ms'])} |"
            f" {_spread(row['added_p50_ms'])} | {_spread(row['added_p95_ms'])} |"
        )
    if not rows:
        out.append("| the runs failed | | | | |")
    return out


def audit_section(report: dict[str, Any]) -> list[str]:
    a = report["audit"]
    out = ["", "## Audit probes", ""]
    if "error" in a:
        return [*out, f"The run failed: {a['error']}."]
    out += [
        "`bench/audit.py`. **Trace fidelity**: scripted proxied turns (buffered and streamed,"
        " zero to two `searchMemory` rounds each, the last quarter with the proxy's rerank on)"
        " against the scripted upstream of the tests, which keeps the exact bytes it received;"
        " each turn is rebuilt from the log and projections alone and compared byte for byte,"
        " then `mnemolog replay --check-traces` re-derives every recorded recall.",
        "",
        "| tier | turns rebuilt exactly | upstream calls | injected contexts | recalls replayed"
        " exactly | differ | unverifiable |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in a["fidelity"]:
        t, rp = run["turns"], run["replay"]
        out.append(
            f"| {run['tier']} | {t['exact']}/{t['turns']} ({100 * (t['fidelity'] or 0):.1f}%) |"
            f" {t['rounds']} | {t['injections']} | {rp.get('exact')}/{rp.get('checked')} |"
            f" {rp.get('differs')} | {rp.get('unverifiable')} |"
        )
    c = a.get("capture")
    if c is not None:
        red, cap = c["redaction"], c["capture"]
        out += [
            "",
            "**Capture safety**: the secrets corpus (CredSweeper's labelled sample lines) sent"
            f" as {c['turns']} user turns with auto-capture on ({c['positive_lines']}"
            " secret-bearing lines, raw and in first-person framings, with a benign fact in each"
            " turn); then every file of the data dir read as bytes and searched for every secret"
            " value.",
            "",
            "| | |",
            "|---|---|",
            f"| data dir scanned | {c['files']} files, {c['bytes']:,} bytes |",
            f"| secret values stored (of {c['values_scanned_for_goal']} of six characters or"
            f" more) | **{c['stored_secret_values']}** |",
            f"| shorter values and JWK key-type labels found (match ordinary bytes) |"
            f" {c['short_or_label_values_found']} of {c['short_or_label_values']} |",
            f"| benign facts captured beside the secrets | {c['benign_captured_beside_secrets']} |",
            f"| redaction span recall (values masked) | {red['span_recall']:.3f}"
            f" ({red['masked']}/{red['spans']}) |",
            f"| redaction false-positive rate (lines without a secret altered) |"
            f" {red['false_positive_rate']:.3f} ({red['negative_lines_altered']}/"
            f"{red['negative_lines']}) |",
            f"| capture precision / recall on the labelled first-person corpus |"
            f" {cap['precision']:.3f} / {cap['recall']:.3f} ({cap['stored']} stored,"
            f" {cap['durable_facts']} durable facts among {cap['corpus_turns']} turns) |",
        ]
    return out


# --- main -------------------------------------------------------------------------------------


def goals(report: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for key, run in report["retrieval"]["runs"].items():
        tier = key.split("/")[0]
        for goal in run.get("goals", []):
            out.append(
                {
                    "goal": f"{goal['goal']} ({tier} tier)",
                    "value": f"{goal['value']:.3f}",
                    "met": goal["met"],
                }
            )
    # The REST API's goals, judged by each repeat; a goal of a store size not run is left out.
    judged: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    for repeat in report["speed"]["repeats_raw"]:
        for goal in repeat.get("goals", []):
            judged.setdefault((goal["tier"], goal["size"], goal["goal"]), []).append(goal)
    for (tier, size, label), verdicts in judged.items():
        if all(v["value"] is None for v in verdicts):
            continue
        met = [v["met"] for v in verdicts if v["met"] is not None]
        out.append(
            {
                "goal": f"REST API, {tier} tier at {size:,}: {label} (median of the repeats)",
                "value": _spread(spread([v["value"] for v in verdicts])),
                "met": statistics.median(met) >= 0.5 if met else None,
            }
        )
    for goal in report["audit"].get("goals", []):
        out.append(goal)
    return out


LOCATION_OPTIONS = ("--out", "--plots", "--json", "--data", "--dir")


def shown_command(argv: Sequence[str]) -> str:
    """The command as the page shows it: what was measured, not where files went."""
    shown: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in LOCATION_OPTIONS:
            skip = True
        elif not arg.startswith(tuple(f"{o}=" for o in LOCATION_OPTIONS)):
            shown.append(arg)
    return " ".join(["bench/run_all.py", *shown])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small limits: under 5 minutes")
    parser.add_argument(
        "--tiers",
        default=",".join(PRODUCT_TIERS),
        help=f"embedder tiers, comma-separated (default: every tier, {','.join(PRODUCT_TIERS)})",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the page to write")
    parser.add_argument("--plots", type=Path, default=None, help="where the PNGs go")
    parser.add_argument("--json", type=Path, default=None, help="also write every figure here")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the bench-data folder")
    parser.add_argument("--dir", type=Path, default=None, help="where temporary dirs go")
    parser.add_argument("--repeats", type=int, default=None, help="speed repeats (3; quick 1)")
    parser.add_argument("--sizes", default=None, help="store sizes (1000,5000,10000; quick 1000)")
    parser.add_argument("--pools", default="10,20,30,50", help="rerank pool sweep (quick 10,30)")
    parser.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    parser.add_argument("--limit-questions", type=int, default=None, metavar="N")
    parser.add_argument("--questions-per-conversation", type=int, default=None, metavar="N")
    parser.add_argument(
        "--limit-questions-for",
        action="append",
        default=[],
        metavar="TIER=N",
        help="LongMemEval: the first N questions (and N abstention ones) for this tier only",
    )
    args = parser.parse_args(argv)
    args.tiers = [t for t in args.tiers.split(",") if t]
    if not args.tiers or any(t not in PRODUCT_TIERS for t in args.tiers):
        parser.error(f"--tiers takes a comma-separated subset of {', '.join(PRODUCT_TIERS)}")
    if not (args.data / "RECIPE.md").is_file():
        parser.error(f"no bench data at {args.data} (use --data)")
    try:
        args.tier_limit_questions = {
            tier: int(n) for tier, n in (item.split("=", 1) for item in args.limit_questions_for)
        }
    except ValueError:
        parser.error("--limit-questions-for takes TIER=N")
    if any(tier not in PRODUCT_TIERS for tier in args.tier_limit_questions):
        parser.error(f"--limit-questions-for: a tier of {', '.join(PRODUCT_TIERS)}")
    q = args.quick
    args.repeats = args.repeats or (1 if q else 3)
    args.sizes = [int(s) for s in (args.sizes or ("1000" if q else "1000,5000,10000")).split(",")]
    if q and args.pools == "10,20,30,50":
        args.pools = "10,30"
    args.pools = [int(p) for p in args.pools.split(",")]
    if q:
        args.limit_conversations = args.limit_conversations or 1
        args.limit_questions = args.limit_questions or 2
        args.questions_per_conversation = args.questions_per_conversation or 40
    args.write_seconds = 1.0 if q else 3.0
    args.queries = 100 if q else 300
    args.proxy_turns = 30 if q else 200
    args.audit_turns = 40 if q else 300
    plots_dir = args.plots or (args.out.parent / args.out.stem)
    if args.dir is not None:
        args.dir = args.dir.resolve()

    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    fsync_dir = args.dir or Path.cwd()
    report: dict[str, Any] = {
        "quick": q,
        "command": shown_command(argv if argv is not None else sys.argv[1:]),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "tiers": args.tiers,
        "tier_limit_questions": args.tier_limit_questions,
        "repeats": args.repeats,
        "write_seconds": args.write_seconds,
        "queries": args.queries,
        "proxy_turns": args.proxy_turns,
        "limits": (
            f"{args.limit_conversations} LoCoMo conversation(s) with"
            f" {args.questions_per_conversation} questions and as many of category 5,"
            f" {args.limit_questions} LongMemEval questions and as many abstention ones, stores of"
            f" {', '.join(map(str, args.sizes))}, {args.repeats} repeat(s), {args.proxy_turns}"
            f" proxy turns a case, {args.audit_turns} audited turns a tier, rerank pools"
            f" {', '.join(map(str, args.pools))}"
        ),
        "machine": machine(),
    }
    progress(
        f"machine: {report['machine']['cpu']}, {report['machine']['cores']} cores; fsync probe"
    )
    report["fsync"] = [fsync_probe(fsync_dir, 100 if q else 300, "start")]
    report["retrieval"] = retrieval(args)
    raw = speed(args)
    report["speed"] = {"repeats": args.repeats, "repeats_raw": raw, "table": speed_table(raw)}
    raw = proxy(args)
    report["proxy"] = {"repeats_raw": raw, "table": proxy_table(raw)}
    report["audit"] = audit(args)
    report["fsync"].append(fsync_probe(fsync_dir, 100 if q else 300, "end"))
    report["load"] = (load_start, os.getloadavg()[0])
    report["total_s"] = time.perf_counter() - started
    report["goals"] = goals(report)
    progress("plots and the page")
    made = plots(report, plots_dir)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    page = render(report, args.out, made)
    args.out.write_text(page + kept_sections(args.out), encoding="utf-8")
    if args.json is not None:
        report["plots"] = {k: str(v) for k, v in made.items()}
        args.json.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    progress(f"wrote {args.out} and {len(made)} plot(s) in {plots_dir} ({report['total_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
