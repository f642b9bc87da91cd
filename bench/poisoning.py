"""How well the poisoning detector tells instructions aimed at future agents from a user's facts.

Reads the labelled corpora of ``tests/data/poisoning/``: ``attacks.jsonl`` (instruction-style
payloads, each should be flagged) and ``benign.jsonl`` (personal facts and remarks, none
should be), each row ``{"id", "category", "split", "text"}``. The rules of
``mnemolog.memory.poisoning.rules`` are designed on the ``dev`` split; ``holdout`` checks them on
texts they were not designed on.

Printed per corpus and split: the flag rate of each category, the total, then every miss (an
attack that passed) and every false positive (a benign text flagged, with its reasons and
evidence), and how often each reason fired on the attacks. No figure is asserted (the goals
are in ``tests/memory/test_poisoning.py``).

    .venv/bin/python bench/poisoning.py [--split dev,holdout] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from mnemolog.memory.poisoning.rules import REASONS, Verdict, detect

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "poisoning"
CORPORA = ("attacks", "benign")


def load(corpus: str) -> list[dict[str, Any]]:
    with (DATA / f"{corpus}.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Flag rates by category, with the rows the detector got wrong for this corpus."""
    by_category: dict[str, list[bool]] = defaultdict(list)
    verdicts: list[tuple[dict[str, Any], Verdict]] = []
    for row in rows:
        verdict = detect(row["text"])
        by_category[row["category"]].append(verdict.flagged)
        verdicts.append((row, verdict))
    flagged = sum(v.flagged for _, v in verdicts)
    return {
        "n": len(rows),
        "flagged": flagged,
        "rate": flagged / len(rows) if rows else 0.0,
        "categories": {
            c: {"n": len(f), "flagged": sum(f), "rate": sum(f) / len(f)}
            for c, f in sorted(by_category.items())
        },
        "verdicts": verdicts,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev,holdout")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    splits = args.split.split(",")
    report: dict[str, Any] = {}
    for corpus in CORPORA:
        rows = load(corpus)
        for split in splits:
            result = score([r for r in rows if r["split"] == split])
            report[f"{corpus}/{split}"] = result
    if args.json:
        out = {
            key: {k: v for k, v in r.items() if k != "verdicts"}
            | {
                "wrong": [
                    {"id": row["id"], "reasons": v.reasons}
                    for row, v in r["verdicts"]
                    if v.flagged != key.startswith("attacks")
                ]
            }
            for key, r in report.items()
        }
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0
    for key, r in report.items():
        corpus, split = key.split("/")
        print(f"\n## {corpus}, {split}: {r['flagged']}/{r['n']} flagged ({r['rate']:.1%})\n")
        print("| category | n | flagged | rate |\n|---|---|---|---|")
        for category, c in r["categories"].items():
            print(f"| {category} | {c['n']} | {c['flagged']} | {c['rate']:.0%} |")
        wrong = [(row, v) for row, v in r["verdicts"] if v.flagged != (corpus == "attacks")]
        title = "misses" if corpus == "attacks" else "false positives"
        print(f"\n{title}: {len(wrong)}")
        for row, v in wrong:
            why = "; ".join(f"{e.reason}: {e.span!r}" for e in v.evidence)
            print(f"- {row['id']}: {row['text']!r}" + (f" -> {why}" if why else ""))
        if corpus == "attacks":
            fired = Counter(reason for _, v in r["verdicts"] for reason in v.reasons)
            print("\nreasons fired: " + ", ".join(f"{x} {fired[x]}" for x in REASONS if fired[x]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
