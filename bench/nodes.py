"""Several mnemolog nodes on one PostgreSQL log, against one node on LMDB, in one run.

For each configuration (LMDB on one node; PostgreSQL with 1, 2 and 3 nodes):

- **log appends**: one process per node, each opening the log and appending ~1 KiB events from
  ``--writers`` threads for ``--seconds``, one event per append and then 100 per append, all
  nodes at once: appends per second, all nodes together (the log alone, as ``log_backends.py``
  measures it for one node).

Then a fresh store is started as real ``mnemolog serve`` processes, and every node gets the
same load at once:

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
    .venv/bin/python bench/nodes.py --seconds 5 --rounds 2 --out docs/benchmarks.md

``--postgres`` defaults to ``MNEMOLOG_TEST_POSTGRES_URL`` (``tools/postgres_trial.sh start``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
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
from log_append import hammer
from psycopg import sql
from recall import Server
from sections import write_section

BATCH = 100
SECTION = "nodes.py"
REPO = Path(__file__).resolve().parent.parent
LABELS = {
    "lmdb-1": "LMDB, 1 node",
    "postgres-1": "PostgreSQL, 1 node",
    "postgres-2": "PostgreSQL, 2 nodes",
    "postgres-3": "PostgreSQL, 3 nodes",
}
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
    root.mkdir(parents=True, exist_ok=True)
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


def append_worker(where: str, writers: int, per_append: int, seconds: float, at: float) -> None:
    """One node's log appends, from ``at`` (a shared start time) on; prints its figures."""
    from mnemolog.eventlog import LmdbEventLog
    from mnemolog.eventlog.postgres_log import PostgresEventLog

    log = (
        PostgresEventLog(where)
        if where.startswith("postgres")
        else LmdbEventLog(Path(where), map_size=1 << 30)
    )
    try:
        time.sleep(max(0.0, at - time.time()))
        latencies, elapsed = hammer(log, writers, per_append, seconds)
    finally:
        log.close()
    print(json.dumps({"appends": len(latencies), "seconds": elapsed, "latencies": latencies}))


def log_appends(
    root: Path, nodes: int, log_url: str | None, writers: int, per_append: int, seconds: float
) -> dict[str, Any]:
    """``nodes`` processes appending to one log at once."""
    where = log_url or str(root / "log")
    at = time.time() + 3.0  # every process imported and connected by then
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--append-worker",
                where,
                str(writers),
                str(per_append),
                str(seconds),
                str(at),
            ],
            stdout=subprocess.PIPE,
        )
        for _ in range(nodes)
    ]
    results = [json.loads(proc.communicate()[0]) for proc in procs]
    elapsed = max(r["seconds"] for r in results)
    appends = sum(r["appends"] for r in results)
    return {
        "appends_per_s": appends / elapsed,
        "events_per_s": appends * per_append / elapsed,
        **latency_summary([x for r in results for x in r["latencies"]]),
    }


def configuration(
    root: Path, nodes: int, log_url: str | None, writers: int, seconds: float
) -> dict[str, Any]:
    appends = {
        "log_single": log_appends(root, nodes, log_url, writers, 1, seconds),
        "log_batches": log_appends(root, nodes, log_url, writers, BATCH, seconds),
    }
    if log_url is not None:  # the stores start from an empty log
        with psycopg.connect(log_url, autocommit=True) as conn:
            conn.execute("DROP SCHEMA mnemolog CASCADE")
    with started(root / "store", nodes, log_url) as servers:
        probe: threading.Thread | None = None
        lags: list[float] = []
        if nodes > 1:
            probe, lags = lag_probe(servers, seconds)
            probe.start()
        single = load(servers, writers, 1, seconds)
        if probe is not None:
            probe.join()
        batches = load(servers, writers, BATCH, seconds)
    figures: dict[str, Any] = {**appends, "single": single, "batches": batches}
    if lags:
        figures["lag"] = {"samples": len(lags), **latency_summary(lags)}
    return figures


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--append-worker":
        where, writers, per_append, seconds, at = sys.argv[2:7]
        append_worker(where, int(writers), int(per_append), float(seconds), float(at))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", default=os.environ.get("MNEMOLOG_TEST_POSTGRES_URL"))
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--writers", type=int, default=2, help="clients per node")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", type=Path, help="write the section into this page")
    args = parser.parse_args()
    began = time.time()
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
    if args.out is not None:
        write_section(args.out, SECTION, section(summary, args, time.time() - began))
    if args.json:
        print(json.dumps({"rounds": runs, "median": summary}, indent=2))
        return
    print(f"{args.writers} writers per node, {args.seconds:g} s per load, median of {args.rounds}")
    heads = ("appends/s", "events/s", "single/s", "p50 ms", "p99 ms", "batched/s", "lag p50", "p99")
    widths = (9, 9, 9, 7, 7, 10, 8, 6)
    print(f"{'':12} " + " ".join(f"{h:>{w}}" for h, w in zip(heads, widths, strict=True)))
    for name, figures in summary.items():
        lag = figures.get("lag", {})
        print(
            f"{name:12} {figures['log_single']['appends_per_s']:9.0f} "
            f"{figures['log_batches']['events_per_s']:9.0f} "
            f"{figures['single']['memories_per_s']:9.0f} "
            f"{figures['single']['p50_ms']:7.2f} {figures['single']['p99_ms']:7.2f} "
            f"{figures['batches']['memories_per_s']:10.0f} "
            f"{_ms(lag.get('p50_ms')):>8} {_ms(lag.get('p99_ms')):>6}"
        )


def section(summary: dict[str, Any], args: argparse.Namespace, seconds: float) -> str:
    code = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    command = " ".join(["python", "bench/nodes.py", *sys.argv[1:]])
    rows = [
        "| | log appends/s, 1 event each | p50 ms | log events/s, 100 per append "
        "| memory writes/s, one per request | p50 ms | p99 ms "
        "| memories/s, 100 per request | lag p50 ms | lag p99 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, figures in summary.items():
        single, batches, lag = figures["single"], figures["batches"], figures.get("lag", {})
        appends, events = figures["log_single"], figures["log_batches"]
        rows.append(
            f"| {LABELS[name]} | {appends['appends_per_s']:,.0f} | {appends['p50_ms']:.2f} "
            f"| {events['events_per_s']:,.0f} "
            f"| {single['memories_per_s']:,.0f} | {single['p50_ms']:.2f} "
            f"| {single['p99_ms']:.2f} | {batches['memories_per_s']:,.0f} "
            f"| {_ms(lag.get('p50_ms'))} | {_ms(lag.get('p99_ms'))} |"
        )
    return (
        "## Several nodes on one PostgreSQL log\n\n"
        f"Written by `{command}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} "
        f"(code {code}), in {seconds / 60:.0f} minutes; `bench/nodes.py` says how each figure "
        f"is taken. {args.writers} clients per node, each writing to a container of its own, "
        f"{args.seconds:g} s per load; the median of {args.rounds} rounds, the configurations "
        "alternating. Every node, the database and the clients share this 2-core machine: more "
        "nodes here means the same CPUs shared by more processes, so the figures show what "
        "sharing a log costs, not what more machines would add. The lag is how long after a "
        "write was acknowledged on one node the other node's projections had applied it "
        "(polled every millisecond, under the single-write load; one probe every 50 ms, so a "
        "few dozen per round, and the p99 is about the slowest of them).\n\n"
        + "\n".join(rows)
        + "\n"
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
