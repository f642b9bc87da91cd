"""What a rerank costs: POST /search with and without ``rerank`` on a 10k store, per pool size.

A ``mnemolog serve`` child process fills a fresh data dir with ``--size`` synthetic memories
(``recall.py``'s texts, batched POST /memories), then is started again once per pool size with
``MNEMOLOG_RERANK_POOL``. Each run sends one reranked search to load the model (its time is
the first rerank's, printed apart), then ``--queries`` pairs of the same query, plain and
reranked, alternating, so both see the same load. The server's own stage times are read back
from ``/inspect``: ``rerank`` is the cross-encoder's. With ``--quality``, ``retrieval.py``
then runs LoCoMo dev with the same pools and each line gets its recall_all@5 and NDCG@10: the
curve of quality against pool size and cost. Nothing is asserted; the goal is printed as met
or not met.

    .venv/bin/python bench/rerank.py [--tier fast|quality] [--size 10000] [--pools 10,20,30,50]
                                     [--queries 100] [--quality [--conversations N]] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from latency import latency_summary
from recall import Server, client, ingest, progress, query_text, server_env

HERE = Path(__file__).resolve().parent
GOAL_POOL = 30
GOAL_P50_MS = 150.0  # a reranked search of a 30-candidate pool at 10k memories, 2 cores
LIMIT = 10


def searches(base_url: str, containers: list[str], count: int, seed: int) -> dict[str, Any]:
    """The first reranked search (it loads the model), then ``count`` alternating plain and
    reranked searches of the same queries; latencies and the server's stage times."""
    r = random.Random(seed)
    times: dict[str, list[float]] = {"plain": [], "rerank": []}
    traces: dict[str, list[str]] = {"plain": [], "rerank": []}
    rescored = 0  # results that carry a rerank score: the pool was not empty
    with client(base_url) as http:
        body = {"q": query_text(r), "containerTag": containers[0], "rerank": True}
        t0 = time.perf_counter()
        first = http.post("/search", json=body)
        first_ms = (time.perf_counter() - t0) * 1e3
        if first.status_code != 200:
            raise RuntimeError(f"a reranked search failed: {first.status_code} {first.text}")
        for _ in range(count):
            body = {"q": query_text(r), "containerTag": r.choice(containers), "limit": LIMIT}
            for kind, extra in (("plain", {}), ("rerank", {"rerank": True})):
                t0 = time.perf_counter()
                answer = http.post("/search", json={**body, **extra})
                times[kind].append(time.perf_counter() - t0)
                found = answer.json()
                traces[kind].append(found["traceId"])
                rescored += sum("rerankScore" in hit for hit in found["results"])
        stages: dict[str, dict[str, list[float]]] = {"plain": {}, "rerank": {}}
        for kind, ids in traces.items():
            for trace in ids:
                shown = http.get(f"/inspect/{trace}").json()
                for stage, ms in (shown.get("latencyMs") or {}).items():
                    stages[kind].setdefault(stage, []).append(ms / 1e3)
    return {
        "first_rerank_ms": first_ms,
        "mean_reranked_results": rescored / max(count, 1),
        **{kind: latency_summary(samples) for kind, samples in times.items()},
        "stages_p50_ms": {
            kind: {stage: latency_summary(s)["p50_ms"] for stage, s in found.items()}
            for kind, found in stages.items()
        },
    }


def quality(args: argparse.Namespace) -> dict[int, dict[str, float]]:
    """LoCoMo dev through ``retrieval.py --rerank`` with the same pools (in its own process)."""
    done = subprocess.run(
        [
            sys.executable,
            str(HERE / "retrieval.py"),
            "--dataset",
            "locomo",
            "--tier",
            args.tier,
            "--rerank",
            "--rerank-pool",
            ",".join(map(str, args.pools)),
            "--json",
            *(
                []
                if args.conversations is None
                else ["--limit-conversations", str(args.conversations)]
            ),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    figures = json.loads(done.stdout)["datasets"]["locomo"]
    levels = figures["levels"]
    out: dict[int, dict[str, float]] = {0: levels["turn"]["ALL"]}
    out[-1] = levels["turn/bm25-stemmed"]["ALL"]
    for pool in args.pools:
        out[pool] = {
            **levels[f"turn/rerank{pool}"]["ALL"],
            "search_p50_ms": figures["rerank_search_ms"][str(pool)]["p50_ms"],
        }
    return out


def render(out: dict[str, Any]) -> str:
    lines = [
        f"mnemolog rerank cost on {out['machine']}: {out['tier']} tier, {out['size']:,} memories"
        f" in {out['containers']} containers, limit {LIMIT}, {out['queries']} query pairs per pool",
        f"load average {out['load_average']['start']:.1f} at the start, "
        f"{out['load_average']['end']:.1f} at the end (another busy process slows every figure)",
        "",
        "  pool  plain p50/p95 ms  reranked p50/p95 ms  rerank stage p50 ms  first rerank ms"
        "  results"
        + ("  LoCoMo recall_all@5  NDCG@10  in-process p50 ms" if out.get("quality") else ""),
    ]
    found = out.get("quality") or {}
    for pool, run in out["pools"].items():
        if "error" in run:
            lines.append(f"  {pool:>4}  failed: {run['error']}")
            continue
        plain, reranked = run["plain"], run["rerank"]
        stage = run["stages_p50_ms"]["rerank"].get("rerank")
        line = (
            f"  {pool:>4}  {plain['p50_ms']:>7.1f} / {plain['p95_ms']:<7.1f}"
            f"  {reranked['p50_ms']:>8.1f} / {reranked['p95_ms']:<8.1f}"
            f"  {stage or 0:>19.1f}  {run['first_rerank_ms']:>15.0f}"
            f"  {run['mean_reranked_results']:>7.1f}"
        )
        if pool in found:
            q = found[pool]
            line += (
                f"  {q['recall_all@5']:>19.3f}  {q['ndcg@10']:>7.3f}  {q['search_p50_ms']:>17.0f}"
            )
        lines.append(line)
    if found:
        hybrid, bm25 = found[0], found[-1]
        lines.append(
            f"  LoCoMo without rerank: hybrid recall_all@5 {hybrid['recall_all@5']:.3f}, NDCG@10"
            f" {hybrid['ndcg@10']:.3f}; BM25 with stop words and stemming"
            f" {bm25['recall_all@5']:.3f} / {bm25['ndcg@10']:.3f}"
        )
    goal = out["pools"].get(GOAL_POOL)
    if goal is not None and "rerank" in goal:
        p50 = goal["rerank"]["p50_ms"]
        verdict = "met" if p50 <= GOAL_P50_MS else "NOT met"
        lines += [
            "",
            f"goal: reranked search p50 <= {GOAL_P50_MS:.0f} ms at pool {GOAL_POOL}: "
            f"{p50:.1f} ms -> {verdict}",
        ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", choices=("quality", "fast"), default="fast")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--containers", type=int, default=4)
    parser.add_argument("--pools", default="10,20,30,50")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--model-cache-dir", type=Path, default=None)
    parser.add_argument("--quality", action="store_true", help="also run LoCoMo per pool")
    parser.add_argument(
        "--conversations", type=int, default=None, metavar="N", help="with --quality: only N"
    )
    parser.add_argument("--dir", type=Path, default=None, help="where the temporary dir goes")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    args.pools = [int(n) for n in args.pools.split(",")]
    out: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}",
        "tier": args.tier,
        "size": args.size,
        "containers": args.containers,
        "queries": args.queries,
        "load_average": {"start": os.getloadavg()[0]},
        "pools": {},
    }
    env = server_env(args.tier, args.model_cache_dir)
    containers = [f"user_{i:02d}" for i in range(args.containers)]
    with tempfile.TemporaryDirectory(prefix="mnemolog-bench-rerank-", dir=args.dir) as tmp:
        workdir = Path(tmp)
        data_dir = workdir / "data"
        server = Server(data_dir, env, workdir / "server.log")
        try:
            server.start()
            progress(f"ingesting {args.size:,} memories")
            out["ingest"] = ingest(
                server.base_url, containers, args.size, args.batch, 1, f"{args.tier}"
            )
        finally:
            server.stop()
        for pool in args.pools:
            progress(f"pool {pool}: {args.queries} plain and reranked searches")
            server = Server(
                data_dir, {**env, "MNEMOLOG_RERANK_POOL": str(pool)}, workdir / "server.log"
            )
            try:
                server.start()
                out["pools"][pool] = searches(server.base_url, containers, args.queries, pool)
            except Exception as exc:  # reported, not raised
                out["pools"][pool] = {"error": f"{type(exc).__name__}: {exc}"}
                progress(server.log_tail())
            finally:
                server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    if args.quality:
        progress("LoCoMo dev with each pool (retrieval.py --rerank)")
        out["quality"] = quality(args)
    out["load_average"]["end"] = os.getloadavg()[0]
    print(json.dumps(out, indent=2) if args.json else render(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
