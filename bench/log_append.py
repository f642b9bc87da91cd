"""Durable appends to the LMDB event log, read against the raw sync latency of the same disk.

Each run opens a fresh ``LmdbEventLog`` in a temporary directory and has 1, then 8, writer
threads append ~1 KB events one at a time for a fixed time. An append counts once
``append()`` has returned, which it does only after the batch holding it is durable. The raw
disk probe writes 4 KiB and calls ``fdatasync`` a few hundred times in the same directory,
before and after the runs, because sync latency on a shared disk drifts over minutes.

    .venv/bin/python bench/log_append.py [--seconds 3] [--dir DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import lmdb
import msgspec
from latency import latency_summary

from mnemolog.eventlog import Actor, Draft, LmdbEventLog
from mnemolog.eventlog.events import AgentSignal

NOTE_CHARS = 700  # pads the stored value (framing included) to about 1 KiB
WRITER_COUNTS = (1, 8)
WARMUP_APPENDS = 20
SYNC_BLOCK = 4096
SYNC_SLOTS = 256
GOAL_WRITERS = 8
GOAL_RATE = 250.0
GOAL_P99_MS = 60.0

_ACTOR = Actor(agent_id="bench", protocol="cli")


def draft(writer: int, n: int) -> Draft:
    """An agent signal whose padded label makes its stored record about 1 KiB."""
    label = f"writer {writer} append {n} "
    label += "." * (NOTE_CHARS - len(label))
    return Draft(_ACTOR, AgentSignal(agent_id="bench", signal="neutral", label=label))


def record_size(log_dir: Path) -> int:
    """The stored size of the first record (framing included), read back from LMDB."""
    env = lmdb.open(str(log_dir), readonly=True, max_dbs=4, lock=False)
    try:
        with env.begin(db=env.open_db(b"log", create=False)) as txn:
            value = txn.get((1).to_bytes(8, "big"))
            return 0 if value is None else len(value)
    finally:
        env.close()


def hammer(log: Any, writers: int, per_append: int, seconds: float) -> tuple[list[float], float]:
    """``writers`` threads appending ``per_append`` events at a time to ``log`` for ``seconds``
    (each at least once): every append's latency, and the seconds the run took."""
    latencies: list[list[float]] = [[] for _ in range(writers)]
    start = threading.Barrier(writers + 1)
    deadline = 0.0

    def writer(index: int) -> None:
        mine = latencies[index]
        start.wait()
        n = 0
        while True:  # at least one append each, however short the run
            batch = [draft(index, n + i) for i in range(per_append)]
            t0 = time.perf_counter()
            log.append(batch)
            t1 = time.perf_counter()
            mine.append(t1 - t0)
            n += per_append
            if t1 >= deadline:
                break

    threads = [
        threading.Thread(target=writer, args=(i,), name=f"bench-writer-{i}") for i in range(writers)
    ]
    for thread in threads:
        thread.start()
    began = time.perf_counter()
    deadline = began + seconds
    start.wait()
    for thread in threads:
        thread.join()
    return [s for mine in latencies for s in mine], time.perf_counter() - began


def run_appends(workdir: Path, writers: int, seconds: float) -> dict[str, Any]:
    """``writers`` threads appending one event at a time to a fresh log for ``seconds``."""
    log_dir = workdir / f"log-{writers}w"
    with LmdbEventLog(log_dir) as log:
        for n in range(WARMUP_APPENDS):
            log.append([draft(-1, n)])
        before = log.writer_stats
        latencies, elapsed = hammer(log, writers, 1, seconds)
        after = log.writer_stats
        head = log.head().seq

    appends = len(latencies)
    if head != WARMUP_APPENDS + appends:
        raise SystemExit(f"log head {head}, expected {WARMUP_APPENDS + appends}")
    commits = after.batches - before.batches
    return {
        "writers": writers,
        "appends": appends,
        "seconds": elapsed,
        "appends_per_s": appends / elapsed,
        "commits": commits,
        "appends_per_commit": appends / commits,
        "largest_batch": after.largest,
        "record_bytes": record_size(log_dir),
        **latency_summary(latencies),
    }


def probe_sync(workdir: Path, count: int, label: str) -> dict[str, Any]:
    """``count`` times: overwrite one 4 KiB block of a preallocated file, then fdatasync."""
    path = workdir / f"sync-probe-{label}"
    block = os.urandom(SYNC_BLOCK)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.pwrite(fd, bytes(SYNC_BLOCK * SYNC_SLOTS), 0)
        os.fsync(fd)
        samples = []
        for i in range(count):
            t0 = time.perf_counter()
            os.pwrite(fd, block, (i % SYNC_SLOTS) * SYNC_BLOCK)
            os.fdatasync(fd)
            samples.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
        path.unlink()
    return {"label": label, "count": count, **latency_summary(samples)}


def goal_met(runs: list[dict[str, Any]]) -> bool:
    return any(
        run["writers"] == GOAL_WRITERS
        and run["appends_per_s"] >= GOAL_RATE
        and run["p99_ms"] <= GOAL_P99_MS
        for run in runs
    )


# Columns of the tables: (heading, key in the figures, format).
APPEND_COLUMNS = (
    ("record B", "record_bytes", "d"),
    ("appends", "appends", "d"),
    ("appends/s", "appends_per_s", ".0f"),
    ("batch avg", "appends_per_commit", ".1f"),
    ("batch max", "largest_batch", "d"),
    ("p50 ms", "p50_ms", ".2f"),
    ("p99 ms", "p99_ms", ".2f"),
    ("max ms", "max_ms", ".2f"),
)
SYNC_COLUMNS = (
    ("syncs", "count", "d"),
    ("p50 ms", "p50_ms", ".2f"),
    ("p99 ms", "p99_ms", ".2f"),
    ("max ms", "max_ms", ".2f"),
)


def table(
    first: str, columns: tuple[tuple[str, str, str], ...], rows: list[tuple[str, dict[str, Any]]]
) -> list[str]:
    lines = [f"{first:<10}" + "".join(f"{heading:>11}" for heading, _, _ in columns)]
    for name, row in rows:
        lines.append(f"{name:<10}" + "".join(f"{row[key]:>11{fmt}}" for _, key, fmt in columns))
    return lines


def render(report: dict[str, Any]) -> str:
    env = report["environment"]
    runs = [
        (f"{r['writers']} writer" + ("s" if r["writers"] > 1 else ""), r) for r in report["appends"]
    ]
    probes = [(p["label"], p) for p in report["sync"]]
    verdict = "met" if report["goal"]["met"] else "NOT met"
    return "\n".join(
        [
            "mnemolog: durable appends to the LMDB event log",
            f"  {env['dir']}  |  {env['cpus']} CPUs  |  Python {env['python']}  |"
            f"  lmdb {env['lmdb']}  |  {report['seconds']:g} s per run",
            "",
            *table("run", APPEND_COLUMNS, runs),
            "",
            f"raw disk sync: {SYNC_BLOCK} B pwrite + fdatasync in the same directory"
            " (a durable LMDB commit makes two syncs)",
            *table("probe", SYNC_COLUMNS, probes),
            "",
            f"goal: >= {GOAL_RATE:g} appends/s at {GOAL_WRITERS} writers with p99 <= "
            f"{GOAL_P99_MS:g} ms (2-core machine): {verdict}",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--seconds", type=float, default=3.0, help="duration of each append run (default 3)"
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path("."),
        help="directory on the disk to measure; a temporary directory is made inside it and "
        "removed afterwards (default: the current directory)",
    )
    parser.add_argument(
        "--sync-count", type=int, default=300, help="syncs per raw disk probe (default 300)"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.sync_count <= 0:
        parser.error("--seconds and --sync-count must be positive")

    workdir = Path(tempfile.mkdtemp(prefix="mnemolog-bench-", dir=args.dir)).resolve()
    try:
        sync = [probe_sync(workdir, args.sync_count, "before")]
        runs = [run_appends(workdir, writers, args.seconds) for writers in WRITER_COUNTS]
        sync.append(probe_sync(workdir, args.sync_count, "after"))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    report: dict[str, Any] = {
        "benchmark": "log_append",
        "seconds": args.seconds,
        "environment": {
            "dir": str(args.dir.resolve()),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "lmdb": lmdb.__version__,
            "msgspec": msgspec.__version__,
        },
        "appends": runs,
        "sync": sync,
        "goal": {
            "writers": GOAL_WRITERS,
            "min_appends_per_s": GOAL_RATE,
            "max_p99_ms": GOAL_P99_MS,
            "met": goal_met(runs),
        },
    }
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
