"""Decided writes on one PostgreSQL log from 1, 2 and 3 nodes, into shared or disjoint
containers: what deciding about one container on several nodes costs.

For each configuration a fresh database gets ``nodes`` real ``mnemolog serve`` processes, then
``--writers`` clients per node POST one new memory per request for ``--seconds``, with no
retry:

- **shared**: every client of every node writes into the same two containers (``team-a`` and
  ``team-b``, alternately), so the nodes decide about the same containers at the same moment;
- **disjoint**: the clients of node *n* write into two containers of that node's own, so no
  two nodes ever decide about one container.

Each configuration reports the writes acknowledged per second (all nodes together), the writes
refused (any answer but 200, by code: ``append_conflict`` when a node gave up deciding again),
and the latency of the acknowledged ones. One node on LMDB is measured beside them, the
embedded log's figure for the same load. Configurations alternate over ``--rounds``, so the
machine's drift falls on all of them; the summary is each figure's median and range.

``--code DIR`` runs the nodes on the code of another checkout (``DIR/src``), say a worktree of
an earlier revision, so one machine measures before and after in one sitting:

    git worktree add /tmp/before HEAD~3
    .venv/bin/python bench/shared_containers.py --code /tmp/before --json > before.json
    .venv/bin/python bench/shared_containers.py --json > after.json

``--postgres`` defaults to ``MNEMOLOG_TEST_POSTGRES_URL`` (``tools/postgres_trial.sh start``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from keepalive import KeepAlive
from latency import latency_summary
from nodes import database, started
from recall import Server

NAMES = [
    "lmdb-1-disjoint",
    "postgres-1-disjoint",
    "postgres-2-disjoint",
    "postgres-3-disjoint",
    "postgres-1-shared",
    "postgres-2-shared",
    "postgres-3-shared",
]


def containers(shared: bool, node: int) -> tuple[str, str]:
    return ("team-a", "team-b") if shared else (f"n{node}-a", f"n{node}-b")


def load(servers: list[Server], writers: int, seconds: float, shared: bool) -> dict[str, Any]:
    """``writers`` clients per node, each POSTing one memory at a time for ``seconds``."""
    latencies: list[float] = []
    refused: Counter[str] = Counter()
    lock = threading.Lock()
    start = threading.Barrier(len(servers) * writers)

    def run(node: int, base_url: str) -> None:
        mine: list[float] = []
        errors: Counter[str] = Counter()
        tags = containers(shared, node)
        with KeepAlive(base_url) as client:
            start.wait()
            stop = time.perf_counter() + seconds
            n = 0
            while time.perf_counter() < stop:
                content = f"The access code of vault {uuid.uuid4().hex[:12]} is {n}."
                body = {"containerTag": tags[n % 2], "memories": [{"content": content}]}
                began = time.perf_counter()
                answer = client.post("/memories", json=body)
                n += 1
                if answer.status_code == 200:
                    mine.append(time.perf_counter() - began)
                    continue
                try:
                    errors[answer.json()["error"]["code"]] += 1
                except (ValueError, KeyError, TypeError):
                    errors[str(answer.status_code)] += 1
        with lock:
            latencies.extend(mine)
            refused.update(errors)

    threads = [
        threading.Thread(target=run, args=(node, server.base_url))
        for node, server in enumerate(servers)
        for _ in range(writers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    attempted = len(latencies) + sum(refused.values())
    return {
        "writes_per_s": len(latencies) / seconds,
        "attempted": attempted,
        "refused": sum(refused.values()),
        "refused_by_code": dict(refused),
        **latency_summary(latencies),
    }


def configuration(
    root: Path, name: str, postgres: str, writers: int, seconds: float
) -> dict[str, Any]:
    backend, count, kind = name.split("-")
    shared = kind == "shared"
    if backend == "lmdb":
        with started(root, 1, None) as servers:
            return load(servers, writers, seconds, shared)
    with database(postgres) as url, started(root, int(count), url) as servers:
        return load(servers, writers, seconds, shared)


def summarise(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median, and its range over the rounds."""
    out: dict[str, Any] = {}
    for key in ("writes_per_s", "refused", "attempted", "p50_ms", "p99_ms"):
        values = [r[key] for r in rounds if r[key] is not None]
        if values:
            out[key] = statistics.median(values)
            out[f"{key}_range"] = [min(values), max(values)]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", default=os.environ.get("MNEMOLOG_TEST_POSTGRES_URL"))
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--writers", type=int, default=4, help="clients per node")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", nargs="*", choices=NAMES, help="these configurations only")
    parser.add_argument("--code", type=Path, help="run the nodes on DIR/src (another checkout)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not args.postgres:
        parser.error("--postgres (or MNEMOLOG_TEST_POSTGRES_URL) names the server")
    names = args.only or NAMES
    root = Path(tempfile.mkdtemp(prefix="mnemolog-shared-"))
    if args.code is not None:
        # The nodes import ``mnemolog`` from this path before the installed (editable) one.
        shim = root / "code"
        shim.mkdir()
        (shim / "mnemolog").symlink_to(args.code.resolve() / "src")
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(shim), os.environ.get("PYTHONPATH")) if p
        )
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    try:
        for round_ in range(args.rounds):
            order = names if round_ % 2 == 0 else list(reversed(names))
            for name in order:
                figures = configuration(
                    root / f"{name}-{round_}", name, args.postgres, args.writers, args.seconds
                )
                runs[name].append(figures)
                print(
                    f"round {round_ + 1} {name}: {figures['writes_per_s']:.0f} writes/s, "
                    f"{figures['refused']} refused of {figures['attempted']}",
                    file=sys.stderr,
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    summary = {name: summarise(rounds) for name, rounds in runs.items()}
    if args.json:
        print(json.dumps({"rounds": runs, "summary": summary}, indent=2))
        return
    print(f"{args.writers} writers per node, {args.seconds:g} s per load, {args.rounds} rounds")
    print(f"{'':22} {'writes/s':>9} {'range':>13} {'refused':>8} {'p50 ms':>7} {'p99 ms':>7}")
    for name, figures in summary.items():
        low, high = figures["writes_per_s_range"]
        print(
            f"{name:22} {figures['writes_per_s']:9.0f} {f'{low:.0f}-{high:.0f}':>13} "
            f"{figures['refused']:8.0f} {figures.get('p50_ms', 0):7.1f} "
            f"{figures.get('p99_ms', 0):7.1f}"
        )


if __name__ == "__main__":
    main()
