"""Derive the similarity thresholds of every embedder from the labelled pairs, and print them
beside the values the product ships (``mnemolog.memory.writing.calibration`` says how).

    .venv/bin/python bench/calibrate.py [--tiers quality,fast] [--split dev] [--json]

The pairs are ``tests/data/write_pairs/<split>.jsonl``. Unrelated pairs are made from the
texts of different labelled pairs (each text against the other side of five pairs at fixed
offsets), so they share neither subject nor wording.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import msgspec
import numpy as np

from mnemolog.embedding import Embedder, open_embedder
from mnemolog.memory.writing.calibration import SHIPPED, Thresholds, derive
from mnemolog.memory.writing.sameness import Gates, judge
from mnemolog.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT / "tests" / "data" / "write_pairs"
UNRELATED_OFFSETS = (1, 7, 13, 29, 53)


def pairs_of(path: Path) -> list[dict[str, str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def cosines(embedder: Embedder, pairs: list[dict[str, str]]) -> Thresholds:
    """The thresholds ``embedder``'s cosines on ``pairs`` give."""
    texts = list(dict.fromkeys(t for p in pairs for t in (p["old"], p["new"])))
    vectors = dict(zip(texts, embedder.embed(texts), strict=True))

    def cos(a: str, b: str) -> float:
        return float(np.dot(vectors[a], vectors[b]))

    # Each text against the texts of a few other pairs, at fixed offsets.
    unrelated = [
        cos(p[side], pairs[(i + offset) % len(pairs)][other])
        for i, p in enumerate(pairs)
        for offset in UNRELATED_OFFSETS
        for side, other in (("old", "new"), ("new", "old"))
    ]
    # The rules' verdict alone: gates that let every pair through to them.
    open_gates = Gates(same=-1.0, possible=-1.0)
    distinct = [p for p in pairs if p["label"] == "distinct"]
    unsure = [
        cos(p["old"], p["new"])
        for p in distinct
        if judge(p["old"], p["new"], 1.0, open_gates).verdict == "possible"
    ]
    return derive(unrelated, unsure, len(distinct))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiers", default="quality,fast")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    pairs = pairs_of(args.data / f"{args.split}.jsonl")
    report = {}
    for tier in args.tiers.split(","):
        embedder = open_embedder(tier, Settings().model_cache)
        derived = cosines(embedder, pairs)
        shipped = SHIPPED.get(embedder.identity.name)
        report[embedder.identity.name] = {"derived": derived, "shipped": shipped}
        if not args.json:
            print(f"{tier}: {embedder.identity.name}")
            print(f"  derived  {derived}")
            print(f"  shipped  {shipped}")
    if args.json:
        print(msgspec.json.encode(report).decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
