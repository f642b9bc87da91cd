"""Several mnemolog nodes on one PostgreSQL log, against one node on LMDB, in one run.

For each configuration (LMDB on one node; PostgreSQL with 1, 2 and 3 nodes) a fresh store is
started as real ``mnemolog serve`` processes, and every node gets the same load at once:

- **single writes**: ``--writers`` clients per node, each POSTing one memory at a time to a
  container of its own for ``--seconds``: memories written per second, all nodes together,
  and the latency of each write;
- **batches**: the same clients POSTing 100 memories per request;
- **lag** (two nodes or more): a probe writes one memory on node 0 every 50 ms while the
  single writers run, then polls node 1's ``GET /stats`` until its projections have applied
  that seq: how far a node's read models trail an append acknowledged on another node.

Every node runs on this machine, beside the database and the clients: with 2 cores, more nodes
share the same CPUs, so the figures say what coordination costs, not what more machines add.
Configurations alternate over ``--rounds`` so the machine's drift falls on all of them.

    .venv/bin/python bench/nodes.py --postgres postgresql://user@host/db --json
    .venv/bin/python bench/nodes.py --seconds 5 --rounds 2

``--postgres`` defaults to ``MNEMOLOG_TEST_POSTGRES_URL`` (``tools/postgres_trial.sh start``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from keepalive import KeepAlive
from latency import latency_summary
from psycopg import sql
from recall import Server

BATCH = 100
PROBE_EVERY = 0.05  # seconds between lag probes
POLL = 0.001  # seconds between looks at the other node's applied seq


@contextmanager
def database(url: str) -> Iterator[str]:
    """A fresh database on the server at ``url``, dropped afterwards."""
    name = "bench_" + uuid.uuid4().hex[:12]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield url.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


@contextmanager
def started(root: Path, count: int, log_url: str | None) -> Iterator[list[Server]]:
    env = {**os.environ, "MNEMOLOG_EMBEDDER": "fast"}
    env.pop("MNEMOLOG_LOG_URL", None)
    if log_url is not None:
        env["MNEMOLOG_LOG_URL"] = log_url
    servers = [Server(root / f"node-{n}", env, root / f"node-{n}.log") for n in range(count)]
    try:
        for server in servers:
            server.start()
        yield servers
    finally:
        for server in servers:
            server.stop()


def load(servers: list[Server], writers: int, per_request: int, seconds: float) -> dict[str, Any]:
    """``writers`` clients per node POSTing ``per_request`` memories at a time."""
    latencies: list[float] = []
    written = [0]
    failed = [0]
    lock = threading.Lock()
    stop = time.perf_counter() + seconds

    def run(base_url: str, name: str) -> None:
        mine: list[float] = []
        count = errors = 0
        with KeepAlive(base_url) as client:
            while time.perf_counter() < stop:
                body = {
                    "containerTag": name,
                    "memories": [
                        {"content": f"Vault {uuid.uuid4().hex[:12]} opens with code {n}."}
                        for n in range(per_request)
                    ],
                }
                began = time.perf_counter()
                answer = client.post("/memories", json=body)
                if answer.status_code != 200:
                    errors += 1
                    continue
                mine.append(time.perf_counter() - began)
                count += per_request
        with lock:
            latencies.extend(mine)
            written[0] += count
            failed[0] += errors

    threads = [
        threading.Thread(target=run, args=(server.base_url, f"n{n}-w{w}"))
        for n, server in enumerate(servers)
        for w in range(writers)
    ]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    return {
        "memories_per_s": written[0] / elapsed,
        "requests_per_s": len(latencies) / elapsed,
        "failed_requests": failed[0],
        **latency_summary(latencies),
    }


def lag_probe(servers: list[Server], seconds: float) -> tuple[threading.Thread, list[float]]:
    """A thread writing on node 0 and timing until node 1 has applied each write."""
    lags: list[float] = []

    def run() -> None:
        stop = time.perf_counter() + seconds
        with KeepAlive(servers[0].base_url) as a, KeepAlive(servers[1].base_url) as b:
            while time.perf_counter() < stop:
                body = {"containerTag": "probe", "memories": [{"content": uuid.uuid4().hex}]}
                answer = a.post("/memories", json=body)
                acknowledged = time.perf_counter()
                if answer.status_code != 200:
                    continue
                seq = answer.json()["memories"][0]["seq"]
                while b.get("/stats").json()["log"]["applied"] < seq:
                    time.sleep(POLL)
                lags.append(time.perf_counter() - acknowledged)
                time.sleep(PROBE_EVERY)

    return threading.Thread(target=run), lags


def configuration(
    root: Path, nodes: int, log_url: str | None, writers: int, seconds: float
) -> dict[str, Any]:
    with started(root, nodes, log_url) as servers:
        probe: threading.Thread | None = None
        lags: list[float] = []
        if nodes > 1:
            probe, lags = lag_probe(servers, seconds)
            probe.start()
        single = load(servers, writers, 1, seconds)
        if probe is not None:
            probe.join()
        batches = load(servers, writers, BATCH, seconds)
    figures: dict[str, Any] = {"single": single, "batches": batches}
    if lags:
        figures["lag"] = {"samples": len(lags), **latency_summary(lags)}
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", default=os.environ.get("MNEMOLOG_TEST_POSTGRES_URL"))
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--writers", type=int, default=2, help="clients per node")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not args.postgres:
        parser.error("--postgres (or MNEMOLOG_TEST_POSTGRES_URL) names the server")
    names = ["lmdb-1", "postgres-1", "postgres-2", "postgres-3"]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    root = Path(tempfile.mkdtemp(prefix="mnemolog-nodes-"))
    try:
        for round_ in range(args.rounds):
            order = names if round_ % 2 == 0 else list(reversed(names))
            for name in order:
                backend, count = name.split("-")
                where = root / f"{name}-{round_}"
                if backend == "lmdb":
                    runs[name].append(configuration(where, 1, None, args.writers, args.seconds))
                    continue
                with database(args.postgres) as url:
                    runs[name].append(
                        configuration(where, int(count), url, args.writers, args.seconds)
                    )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    summary = {name: _median(rounds) for name, rounds in runs.items()}
    if args.json:
        print(json.dumps({"rounds": runs, "median": summary}, indent=2))
        return
    print(f"{args.writers} writers per node, {args.seconds:g} s per load, median of {args.rounds}")
    heads = ("single/s", "p50 ms", "p99 ms", "batched/s", "lag p50", "p99")
    widths = (9, 7, 7, 10, 8, 6)
    print(f"{'':12} " + " ".join(f"{h:>{w}}" for h, w in zip(heads, widths, strict=True)))
    for name, figures in summary.items():
        lag = figures.get("lag", {})
        print(
            f"{name:12} {figures['single']['memories_per_s']:9.0f} "
            f"{figures['single']['p50_ms']:7.2f} {figures['single']['p99_ms']:7.2f} "
            f"{figures['batches']['memories_per_s']:10.0f} "
            f"{_ms(lag.get('p50_ms')):>8} {_ms(lag.get('p99_ms')):>6}"
        )


def _median(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each figure over the rounds."""
    out: dict[str, Any] = {}
    for part in rounds[0]:
        out[part] = {
            key: statistics.median(r[part][key] for r in rounds)
            for key, value in rounds[0][part].items()
            if isinstance(value, (int, float)) and all(r[part][key] is not None for r in rounds)
        }
    return out


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


if __name__ == "__main__":
    main()
