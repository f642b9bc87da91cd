"""Embedding throughput of both tiers, and the one-time build of the fast tier.

Distils the fast tier into a temporary cache (timed), then embeds short (~40 characters) and
long (~300 characters) texts with each tier, one text per call and 32 per call, for a fixed
time each, and prints sentences per second and milliseconds per call. No figure is asserted.

    .venv/bin/python bench/embed.py [--seconds 3] [--threads 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mnemolog.embedding import FAST_BASE, Embedder, QualityEmbedder, load_or_build_static

BATCH_SIZES = (1, 32)
POOL = 2048  # distinct texts per length, cycled through

_SUBJECTS = ["John", "Maria", "The team", "Our client", "My sister", "The new intern", "Dr. Okafor"]
_VERBS = ["prefers", "asked for", "booked", "cancelled", "moved", "forgot", "reviewed", "likes"]
_OBJECTS = [
    "dark mode",
    "the Friday meeting",
    "a window seat",
    "the staging deploy",
    "oat milk in coffee",
    "the quarterly report",
    "tickets to Lisbon",
    "the blue notebook",
]
_TAILS = [
    "after the call on Tuesday",
    "because the room was double-booked",
    "and wants a reminder one day before",
    "but only when working late",
    "as agreed with the finance team last spring",
    "since the old laptop kept overheating",
]


def _sentence(rng: random.Random) -> str:
    parts = [rng.choice(_SUBJECTS), rng.choice(_VERBS), rng.choice(_OBJECTS)]
    if rng.random() < 0.5:
        parts.append(rng.choice(_TAILS))
    return " ".join(parts) + "."


def texts(length: int, count: int, seed: int) -> list[str]:
    """``count`` texts of ``length`` characters give or take 10, cut at a word boundary."""
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < count:
        text = _sentence(rng)
        while len(text) < length - 10:
            text += " " + _sentence(rng)
        if len(text) > length + 10:
            text = text[: length + 10].rsplit(" ", 1)[0]
        if abs(len(text) - length) <= 10:
            out.append(text)
    return out


def throughput(embedder: Embedder, pool: list[str], batch: int, seconds: float) -> dict[str, float]:
    """Sentences per second and milliseconds per call, calling ``embed`` with ``batch`` texts."""
    embedder.embed(pool[:batch])  # warm up (first session run, caches)
    done = calls = 0
    started = time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        start = (calls * batch) % (len(pool) - batch)
        embedder.embed(pool[start : start + batch])
        done += batch
        calls += 1
    return {
        "sentences_per_s": done / elapsed,
        "ms_per_call": 1000 * elapsed / calls,
        "calls": calls,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    quality = QualityEmbedder(threads=args.threads)
    base = QualityEmbedder(spec=FAST_BASE, threads=args.threads)  # what the fast tier distils
    with tempfile.TemporaryDirectory(prefix="mnemolog-bench-embed-") as cache:
        started = time.perf_counter()
        static = load_or_build_static(Path(cache), base)
        build_s = time.perf_counter() - started
        started = time.perf_counter()
        load_or_build_static(Path(cache), base)
        load_s = time.perf_counter() - started

        pools = {"short": texts(40, POOL, 1), "long": texts(300, POOL, 2)}
        rows: list[dict[str, Any]] = []
        for tier, embedder in (("quality", quality), ("fast", static)):
            for kind, pool in pools.items():
                mean_chars = sum(map(len, pool)) / len(pool)
                for batch in BATCH_SIZES:
                    figures = throughput(embedder, pool, batch, args.seconds)
                    rows.append(
                        {"tier": tier, "texts": kind, "chars": round(mean_chars), "batch": batch}
                        | figures
                    )

    report = {
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}",
        "threads": args.threads,
        "static_build_s": build_s,
        "static_cached_load_s": load_s,
        "runs": rows,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"machine: {report['machine']}; onnxruntime threads: {args.threads}")
    print(f"fast tier: built in {build_s:.1f} s; loaded from its cache in {load_s:.2f} s")
    print()
    print(f"{'tier':8} {'texts':6} {'chars':>5} {'batch':>5} {'sentences/s':>12} {'ms/call':>9}")
    for row in rows:
        print(
            f"{row['tier']:8} {row['texts']:6} {row['chars']:>5} {row['batch']:>5} "
            f"{row['sentences_per_s']:>12,.0f} {row['ms_per_call']:>9.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
