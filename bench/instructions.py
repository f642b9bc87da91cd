"""Instructions a single write and a search execute, counted by valgrind: a measure of the hot
paths that the machine's noise does not move.

    .venv/bin/python bench/instructions.py                         # a 10k store, 60 of each
    .venv/bin/python bench/instructions.py --size 10000 --calls 100 --store /tmp/s10k --json
    PYTHONPATH=/path/to/other/checkout/shim .venv/bin/python bench/instructions.py --store /tmp/s10k

On a shared 2-core machine two timings of the same code differ by 30% and more from one
minute to the next, more than most changes of a hot path. ``valgrind --tool=callgrind`` counts
the instructions the process executes instead: the same code on the same store gives the same
count within about 1%, whatever else runs. It is no timing (a cache miss costs one
instruction), so a change is judged by both: the count says whether the work shrank, the
timings (``profile.py``) how much that is worth.

One container is filled to ``--size`` through the write path (``WriteCombiner``, batches of
500, in process; kept in ``--store`` when given, and reused from there), then the store is
copied, opened, warmed with 20 writes, and counted: ``--calls`` single writes (each answered
only once durable and applied, as over HTTP) and ``--calls`` searches (10 results, fast tier),
each phase dumped apart. Every thread of the process is counted: the log's group commit and
the projections' apply included, the graph worker's inserts as they happen. What runs on a
clock is switched off while counting, since under valgrind (about 50 times slower) its period
passes within a write or two: the indexes' save (every 30 s) and the full-text index's commit of
its tail (every 0.5 s; at 100 writes a second, one commit for about 50 writes). Their cost is
of the store's size and the clock, not of one write.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recall import memory_texts, query_text

CONTAINER = "counted"
FILL_BATCH = 500


def fill(store: Path, size: int) -> None:
    from mnemolog.eventlog import Actor
    from mnemolog.memory.writing.versions import NewMemory
    from mnemolog.runtime import Runtime
    from mnemolog.settings_env import settings_from_env

    env = {**os.environ, "MNEMOLOG_DATA_DIR": str(store), "MNEMOLOG_EMBEDDER": "fast"}
    runtime = Runtime(settings_from_env(env))
    actor = Actor(agent_id="local", protocol="rest")
    texts = memory_texts(seed=size)
    try:
        for done in range(0, size, FILL_BATCH):
            batch = [NewMemory(content=next(texts)) for _ in range(min(FILL_BATCH, size - done))]
            runtime.core.combiner.write(CONTAINER, batch, actor)
    finally:
        runtime.close()


def counted(store: Path, size: int, calls: int) -> None:
    """Runs under callgrind, instrumentation off until the counted phases."""
    import mnemolog.projections.indexes as indexes
    from mnemolog.eventlog import Actor
    from mnemolog.memory.recall.messages import RecallRequest
    from mnemolog.memory.writing.versions import NewMemory
    from mnemolog.projections.fulltext.index import FullTextIndex
    from mnemolog.runtime import Runtime
    from mnemolog.settings_env import settings_from_env

    # What runs on a clock, off: see the module's docstring.
    indexes._SAVE_EVERY_SECONDS = float("inf")
    indexes._SAVE_EVERY_RECORDS = 1 << 62
    defaults = FullTextIndex.__init__.__kwdefaults__
    assert defaults is not None
    defaults["commit_interval"] = float("inf")
    env = {**os.environ, "MNEMOLOG_DATA_DIR": str(store), "MNEMOLOG_EMBEDDER": "fast"}
    runtime = Runtime(settings_from_env(env))
    actor = Actor(agent_id="local", protocol="rest")
    texts = memory_texts(seed=size)
    for _ in range(size):
        next(texts)  # the texts after those the store holds
    me = str(os.getpid())

    def control(*args: str) -> None:
        subprocess.run(["callgrind_control", *args, me], check=True, stdout=subprocess.DEVNULL)

    try:
        for _ in range(20):
            runtime.core.combiner.write(CONTAINER, [NewMemory(content=next(texts))], actor)
        time.sleep(2)  # the graph worker's backlog of the warm-up, outside the count
        control("-i", "on")
        for _ in range(calls):
            runtime.core.combiner.write(CONTAINER, [NewMemory(content=next(texts))], actor)
        control("-d", "writes")
        questions = random.Random(1)
        for _ in range(calls):
            request = RecallRequest(q=query_text(questions), container_tag=CONTAINER, limit=10)
            runtime.core.recall.search(request, origin="rest", actor=actor, durable=False)
        control("-d", "searches")
        control("-i", "off")
    finally:
        runtime.close()


def totals(out: Path) -> dict[str, int]:
    """The instruction count of each dumped phase, by its trigger's name."""
    found: dict[str, int] = {}
    for part in out.parent.glob(out.name + ".*"):
        text = part.read_text(errors="replace")
        trigger = re.search(r"^desc: Trigger: dump (\w+)", text, re.MULTILINE)
        total = re.search(r"^totals: (\d+)", text, re.MULTILINE)
        if trigger and total:
            found[trigger.group(1)] = int(total.group(1))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000, help="memories in the container")
    parser.add_argument("--calls", type=int, default=60, help="writes, then searches, counted")
    parser.add_argument("--store", type=Path, help="keep the filled store here, reuse it")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--counted", type=Path, help=argparse.SUPPRESS)  # the child's store
    args = parser.parse_args()
    if args.counted is not None:
        counted(args.counted, args.size, args.calls)
        return
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("instructions.py needs valgrind (Debian: apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as work:
        store = args.store or Path(work) / "store"
        if not store.exists():
            print(f"filling {args.size:,} memories into {store}", file=sys.stderr, flush=True)
            fill(store, args.size)
        copy = Path(work) / "copy"
        shutil.copytree(store, copy)
        out = Path(work) / "callgrind.out"
        print("counting under valgrind (a minute or two)", file=sys.stderr, flush=True)
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--instr-atstart=no",
                f"--callgrind-out-file={out}",
                sys.executable,
                __file__,
                "--size",
                str(args.size),
                "--calls",
                str(args.calls),
                "--counted",
                str(copy),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        found = totals(out)
    report = {
        "size": args.size,
        "calls": args.calls,
        "write_instructions": round(found["writes"] / args.calls),
        "search_instructions": round(found["searches"] / args.calls),
    }
    if args.json:
        print(json.dumps(report))
    else:
        print(
            f"at {args.size:,} memories: a write {report['write_instructions'] / 1e6:.1f} M"
            f" instructions, a search {report['search_instructions'] / 1e6:.1f} M"
            f" (each the mean of {args.calls})"
        )


if __name__ == "__main__":
    main()
