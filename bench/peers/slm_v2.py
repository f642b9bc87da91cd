"""SuperLocalMemory V2 driven in its own process, for ``bench/scale.py``: the same phases as
mnemolog's, timed inside this process (the peer is a library, with no server of its own).

Run by ``scale.py`` with the peer's interpreter (one with scikit-learn and hnswlib, the peer's
optional dependencies, so that it runs its best configuration):

    PEER_PYTHON bench/peers/slm_v2.py --src CHECKOUT/src --dir DIR --facts FACTS.jsonl \
        --fill N --singles N --writers 8 --per-writer N --queries N

Prints one JSON object on stdout. The peer's code is not part of this repository: ``--src`` is
the ``src`` directory of a checkout of https://github.com/varun369/SuperLocalMemoryV2 at tag
``v2.8.6``. Standard library only here; the peer brings numpy and scikit-learn.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def allocated(path: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--src", type=Path, required=True)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--facts", type=Path, required=True)
    parser.add_argument("--fill", type=int, required=True)
    parser.add_argument("--singles", type=int, required=True)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--per-writer", type=int, required=True)
    parser.add_argument("--queries", type=int, required=True)
    args = parser.parse_args()
    # The peer keeps its files under ~/.claude-memory: a home of its own for this run.
    os.environ["HOME"] = str(args.dir / "home")
    (args.dir / "home").mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(args.src.resolve()))
    from memory_store_v2 import MemoryStoreV2  # type: ignore[import-not-found]

    facts = [json.loads(line) for line in args.facts.read_text().splitlines()]
    db = args.dir / "home" / ".claude-memory" / "memory.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    store = MemoryStoreV2(db_path=db)
    ids: dict[int, int] = {}
    at = 0

    started = time.perf_counter()
    while at < args.fill:
        ids[at] = store.add_memory(facts[at]["text"])
        at += 1
    fill_s = time.perf_counter() - started

    single_ms = []
    started = time.perf_counter()
    for _ in range(args.singles):
        t = time.perf_counter()
        ids[at] = store.add_memory(facts[at]["text"])
        single_ms.append((time.perf_counter() - t) * 1000)
        at += 1
    singles_s = time.perf_counter() - started

    errors = 0
    lock = threading.Lock()

    def writer(first: int) -> None:
        nonlocal errors
        for n in range(first, first + args.per_writer):
            try:
                found = store.add_memory(facts[n]["text"])
                with lock:
                    ids[n] = found
            except Exception:
                with lock:
                    errors += 1

    threads = [
        threading.Thread(target=writer, args=(at + w * args.per_writer,))
        for w in range(args.writers)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writers_s = time.perf_counter() - started
    at += args.writers * args.per_writer

    # Warm: the store reopened as a long-running process has it (its HNSW graph and TF-IDF
    # matrix built at start), and one search made before the timed ones.
    started = time.perf_counter()
    store = MemoryStoreV2(db_path=db)
    boot_s = time.perf_counter() - started
    store.search(facts[0]["question"], limit=10)
    step = max(1, at // args.queries)
    asked = list(range(0, at, step))[: args.queries]
    search_ms = []
    hits = 0
    for n in asked:
        t = time.perf_counter()
        found = store.search(facts[n]["question"], limit=10)
        search_ms.append((time.perf_counter() - t) * 1000)
        hits += ids.get(n) in {r["id"] for r in found}
    result: dict[str, Any] = {
        "memories": at,
        "fill_per_s": args.fill / fill_s,
        "single_per_s": args.singles / singles_s,
        "single_p50_ms": statistics.median(single_ms),
        "writers_per_s": args.writers * args.per_writer / writers_s,
        "writers_errors": errors,
        "search_p50_ms": statistics.median(search_ms),
        "search_p99_ms": percentile(search_ms, 0.99),
        "hit_at_10": hits / len(asked),
        # Its database alone (the figure peers quote), and every file it keeps: the HNSW
        # graph of its TF-IDF vectors and its automatic backups.
        "bytes_per_memory": sum(
            p.stat().st_blocks * 512 for p in db.parent.glob("memory.db*") if p.is_file()
        )
        / at,
        "bytes_per_memory_all_files": allocated(args.dir / "home") / at,
        "rss_mib": rss_kib() / 1024,
        "boot_s": boot_s,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
