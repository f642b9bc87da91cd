"""The two event logs side by side in one run: durable appends to LMDB and to PostgreSQL, and
how soon a second PostgreSQL log open on the same tables sees each append (what another node
would wait before it could apply it).

Each round opens a fresh LMDB log in a temporary directory and a fresh PostgreSQL log in a new
schema, and times on each, in turn: 1 writer appending one ~1 KiB event at a time, 8 writers
doing the same, and 1 writer appending batches of 100. An append counts once ``append()`` has
returned, that is once its batch is durable. Rounds alternate the two backends so the
machine's drift falls on both.

    .venv/bin/python bench/log_backends.py --postgres postgresql://user@host/db
    .venv/bin/python bench/log_backends.py --seconds 5 --rounds 3 --json

``--postgres`` defaults to ``MNEMOLOG_TEST_POSTGRES_URL``, which ``tools/postgres_trial.sh start``
sets for a throwaway cluster.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from latency import latency_summary
from log_append import draft, hammer
from psycopg import sql

from mnemolog.eventlog import LmdbEventLog
from mnemolog.eventlog.committed import GroupCommittedLog
from mnemolog.eventlog.postgres_log import PostgresEventLog

BATCH = 100


def timed_appends(
    log: GroupCommittedLog, writers: int, per_append: int, seconds: float
) -> dict[str, Any]:
    """``writers`` threads appending ``per_append`` events at a time for ``seconds``."""
    latencies, elapsed = hammer(log, writers, per_append, seconds)
    return {
        "writers": writers,
        "events_per_append": per_append,
        "appends_per_s": len(latencies) / elapsed,
        "events_per_s": len(latencies) * per_append / elapsed,
        **latency_summary(latencies),
    }


def follower_lag(
    leader: PostgresEventLog, follower: PostgresEventLog, count: int
) -> dict[str, Any]:
    """How long after an append began on ``leader`` (and after it was acknowledged there)
    ``follower`` sees its seq."""
    from_start, from_ack = [], []
    for n in range(count):
        t0 = time.perf_counter()
        seq = leader.append([draft(0, n)]).seqs[-1]
        acked = time.perf_counter()
        seen = follower.wait_for(seq - 1, timeout=10)
        t1 = time.perf_counter()
        if seen < seq:
            raise SystemExit(f"the follower did not see seq {seq} within 10 s")
        from_start.append(t1 - t0)
        from_ack.append(t1 - acked)
        time.sleep(0.002)  # one append at a time, as a node's single writes come
    start, ack = latency_summary(from_start), latency_summary(from_ack)
    return {
        "p50_ms": start["p50_ms"],
        "p99_ms": start["p99_ms"],
        "after_ack_p50_ms": ack["p50_ms"],
        "after_ack_p99_ms": ack["p99_ms"],
    }


def runs_on(log: GroupCommittedLog, seconds: float) -> list[dict[str, Any]]:
    return [
        timed_appends(log, 1, 1, seconds),
        timed_appends(log, 8, 1, seconds),
        timed_appends(log, 1, BATCH, seconds),
    ]


def in_schema(url: str, body: Callable[[str], Any]) -> Any:
    schema = "bench_" + uuid.uuid4().hex[:12]
    try:
        return body(schema)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def one_round(url: str, workdir: Path, seconds: float, lag_count: int) -> dict[str, Any]:
    lmdb_dir = workdir / f"lmdb-{uuid.uuid4().hex[:8]}"
    with LmdbEventLog(lmdb_dir) as log:
        lmdb_runs = runs_on(log, seconds)
    shutil.rmtree(lmdb_dir)

    def postgres(schema: str) -> dict[str, Any]:
        with PostgresEventLog(url, schema=schema) as log:
            runs = runs_on(log, seconds)
            with PostgresEventLog(url, schema=schema, readonly=True) as follower:
                lag = follower_lag(log, follower, lag_count)
        return {"runs": runs, "follower_lag": lag}

    found = in_schema(url, postgres)
    return {"lmdb": lmdb_runs, "postgres": found["runs"], "follower_lag": found["follower_lag"]}


def summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Per run kind and backend: the median and spread of events per second over rounds."""
    out: dict[str, Any] = {}
    for backend in ("lmdb", "postgres"):
        for i, run in enumerate(rounds[0][backend]):
            name = f"{run['writers']}w x{run['events_per_append']}"
            rates = [r[backend][i]["events_per_s"] for r in rounds]
            p50s = [r[backend][i]["p50_ms"] for r in rounds]
            out.setdefault(name, {})[backend] = {
                "events_per_s": statistics.median(rates),
                "events_per_s_range": [min(rates), max(rates)],
                "p50_ms": statistics.median(p50s),
            }
    lags = [r["follower_lag"] for r in rounds]
    out["follower_lag_ms"] = {
        "p50": statistics.median(lag["p50_ms"] for lag in lags),
        "p99": max(lag["p99_ms"] for lag in lags),
        "after_ack_p50": statistics.median(lag["after_ack_p50_ms"] for lag in lags),
        "after_ack_p99": max(lag["after_ack_p99_ms"] for lag in lags),
    }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", default=os.environ.get("MNEMOLOG_TEST_POSTGRES_URL"))
    parser.add_argument("--seconds", type=float, default=3.0, help="per run (default 3)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (default 2)")
    parser.add_argument("--lag-appends", type=int, default=300, help="appends timed for lag")
    parser.add_argument("--dir", type=Path, default=Path("."), help="where the LMDB logs go")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if not args.postgres:
        parser.error(
            "name a PostgreSQL database with --postgres (a throwaway one: "
            'eval "$(tools/postgres_trial.sh start)", then MNEMOLOG_TEST_POSTGRES_URL is set)'
        )
    workdir = Path(tempfile.mkdtemp(prefix="mnemolog-bench-", dir=args.dir)).resolve()
    try:
        rounds = [
            one_round(args.postgres, workdir, args.seconds, args.lag_appends)
            for _ in range(args.rounds)
        ]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report = {"benchmark": "log_backends", "seconds": args.seconds, "rounds": rounds}
    report["summary"] = summary(rounds)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print("mnemolog: durable appends, LMDB against PostgreSQL (one node), events per second")
    print(f"{'run':<12}{'LMDB':>12}{'PostgreSQL':>12}{'LMDB p50':>11}{'PG p50':>10}")
    for name, row in report["summary"].items():
        if name == "follower_lag_ms":
            continue
        lm, pg = row["lmdb"], row["postgres"]
        print(
            f"{name:<12}{lm['events_per_s']:>12,.0f}{pg['events_per_s']:>12,.0f}"
            f"{lm['p50_ms']:>9.2f}ms{pg['p50_ms']:>8.2f}ms"
        )
    lag = report["summary"]["follower_lag_ms"]
    print(
        f"a second PostgreSQL log sees an append p50 {lag['p50']:.2f} ms, p99 {lag['p99']:.2f} ms"
        f" after it began (p50 {lag['after_ack_p50']:.2f}, p99 {lag['after_ack_p99']:.2f} ms"
        " after its acknowledgement)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
