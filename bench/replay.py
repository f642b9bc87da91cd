"""``mnemolog replay --as-of`` on a large log: from the nearest snapshot, and from the start.

Builds a store of N synthetic memories (fast tier, batched writes through the write decision, as
``bench/recall.py`` makes them, 8 containers) with snapshots every ``--snapshot-every``
records, then times the CLI as a user runs it (a child process, imports and all) at three
instants: the end of the log, the middle, and a tenth in; then the same with the snapshots
moved aside, so each replay folds from the first record. Nothing is asserted; the goal is
printed as met or not.

    .venv/bin/python bench/replay.py [--memories 100000] [--snapshot-every 20000]
                                     [--data-dir DIR (reuse a store built before)] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from recall import memory_texts

from mnemolog.clock import iso
from mnemolog.eventlog import Actor
from mnemolog.memory import NewMemory
from mnemolog.projections.memories.snapshots import snapshot_files
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

MNEMOLOG = Path(sys.executable).parent / "mnemolog"
GOAL_SECONDS = 10.0  # replay --as-of on a 100k-memory log
ACTOR = Actor(agent_id="bench-replay", protocol="import")
BATCH = 500


def build(data_dir: Path, memories: int, every: int) -> dict[str, Any]:
    started = time.perf_counter()
    runtime = Runtime(Settings(data_dir=data_dir, embedder="fast", snapshot_every=every))
    instants: list[str] = []
    try:
        texts = memory_texts(7)
        for n in range(0, memories, BATCH):
            items = [NewMemory(content=next(texts)) for _ in range(min(BATCH, memories - n))]
            runtime.core.writes.write(f"c{(n // BATCH) % 8}", items, ACTOR)
            instants.append(iso(time.time_ns()))
        head = runtime.log.head().seq
    finally:
        runtime.close()
    return {
        "seconds": time.perf_counter() - started,
        "head": head,
        "instants": {
            "end": instants[-1],
            "middle": instants[len(instants) // 2],
            "tenth": instants[len(instants) // 10],
        },
    }


def replay(data_dir: Path, at: str) -> dict[str, Any]:
    started = time.perf_counter()
    done = subprocess.run(
        [str(MNEMOLOG), "replay", "--data-dir", str(data_dir), "--as-of", at, "--json"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "MNEMOLOG_EMBEDDER": "fast"},
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    belief = json.loads(done.stdout)
    return {"seconds": seconds, "seq": belief["seq"], "memories": len(belief["memories"])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--snapshot-every", type=int, default=20_000)
    parser.add_argument("--data-dir", type=Path, default=None, help="reuse (or keep) this store")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    scratch = None
    if args.data_dir is None:
        scratch = Path(tempfile.mkdtemp(prefix="mnemolog-bench-replay-"))
        data_dir = scratch / "data"
    else:
        data_dir = args.data_dir
    try:
        built = None
        instants_file = data_dir / "bench-instants.json"
        if not (data_dir / "log" / "data.mdb").exists():
            built = build(data_dir, args.memories, args.snapshot_every)
            instants_file.write_text(json.dumps(built["instants"]))
        instants: dict[str, str] = json.loads(instants_file.read_text())
        snapshots = snapshot_files(data_dir / "snapshots")
        runs: dict[str, dict[str, Any]] = {}
        for name, at in instants.items():
            runs[f"snapshot/{name}"] = replay(data_dir, at)
        aside = data_dir.parent / "snapshots-aside"
        shutil.move(data_dir / "snapshots", aside)
        try:
            for name, at in instants.items():
                runs[f"from-start/{name}"] = replay(data_dir, at)
        finally:
            shutil.move(aside, data_dir / "snapshots")
        report = {
            "machine": f"{os.cpu_count()} CPUs, Python {platform.python_version()}",
            "load": os.getloadavg(),
            "build": built,
            "snapshots": [seq for seq, _ in snapshots],
            "runs": runs,
            "goal": {
                "seconds": GOAL_SECONDS,
                "met": runs["snapshot/end"]["seconds"] <= GOAL_SECONDS,
            },
        }
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            render(report)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


def render(report: dict[str, Any]) -> None:
    print("mnemolog: replay --as-of through the CLI (child process, imports included)")
    print(f"  {report['machine']}, load average {tuple(round(x, 2) for x in report['load'])}")
    if report["build"]:
        b = report["build"]
        print(f"  store built in {b['seconds']:.1f} s, {b['head']:,} log records")
    print(f"  snapshots at seqs {report['snapshots']}")
    print(f"  {'run':<22} {'seconds':>8} {'log seq':>9} {'memories':>9}")
    for name, run in report["runs"].items():
        print(f"  {name:<22} {run['seconds']:>8.2f} {run['seq']:>9,} {run['memories']:>9,}")
    goal = report["goal"]
    verdict = "met" if goal["met"] else "NOT met"
    seconds = report["runs"]["snapshot/end"]["seconds"]
    limit = f"{goal['seconds']:.0f} s"
    print(f"goal: replay --as-of <= {limit} at the end of the log: {verdict} ({seconds:.2f} s)")


if __name__ == "__main__":
    sys.exit(main())
