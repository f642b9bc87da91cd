"""The learning curve of ``bench/feedback.py`` as a section of ``docs/benchmarks.md`` and a plot.

Takes the ``--json`` reports of two runs, with the position-bias correction and without
(``--no-propensity``), and writes the table and ``docs/benchmarks/feedback_curve.png``:
NDCG@5 against feedback events per container, on the questions agents asked (new recalls of
them) and on the questions held out, each with the learned stage and without.

    .venv/bin/python bench/feedback_report.py with.json without.json [--out docs/benchmarks.md]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from sections import write_section

REPO = Path(__file__).resolve().parents[1]
PLOT = REPO / "docs" / "benchmarks" / "feedback_curve.png"


def plot(with_ipw: list[dict[str, Any]], without: list[dict[str, Any]], path: Path) -> None:
    figure, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for axis, share, title in (
        (axes[0], "asked", "questions agents asked (new recalls)"),
        (axes[1], "held_out", "questions no agent asked"),
    ):
        events = [p["events"] for p in with_ipw]
        axis.plot(events, [p[f"{share}/unlearned/ndcg@5"] for p in with_ipw], "k--",
                  label="without the learned stage")  # fmt: skip
        axis.plot(events, [p[f"{share}/learned/ndcg@5"] for p in with_ipw], "o-",
                  label="learned, propensity-corrected")  # fmt: skip
        axis.plot([p["events"] for p in without], [p[f"{share}/learned/ndcg@5"] for p in without],
                  "s-", label="learned, no correction")  # fmt: skip
        axis.set_title(title)
        axis.set_xlabel("feedback events per container")
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("NDCG@5 (LoCoMo dev, 3 conversations)")
    axes[0].legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)


def table(with_ipw: list[dict[str, Any]], without: list[dict[str, Any]]) -> str:
    rows = [
        "| feedback events | asked: without | asked: learned (corrected / not) "
        "| held out: without | held out: learned (corrected / not) | containers served by a"
        " model (corrected / not) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for a, b in zip(with_ipw, without, strict=True):
        rows.append(
            f"| {a['events']:,} | {a['asked/unlearned/ndcg@5']:.4f}"
            f" | {a['asked/learned/ndcg@5']:.4f} / {b['asked/learned/ndcg@5']:.4f}"
            f" | {a['held_out/unlearned/ndcg@5']:.4f}"
            f" | {a['held_out/learned/ndcg@5']:.4f} / {b['held_out/learned/ndcg@5']:.4f}"
            f" | {_serving(a)} / {_serving(b)} of {len(a['serving'])} |"
        )
    return "\n".join(rows) + "\n"


def _serving(point: dict[str, Any]) -> int:
    return sum(digest is not None for digest in point["serving"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("with_ipw", type=Path)
    parser.add_argument("without", type=Path)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks.md")
    args = parser.parse_args()
    with_ipw = json.loads(args.with_ipw.read_text())["curve"]
    without = json.loads(args.without.read_text())["curve"]
    plot(with_ipw, without, PLOT)
    last = with_ipw[-1]
    body = (
        "## Recall that learns from use\n\n"
        "`python bench/feedback.py --json` and `--no-propensity --json`, then "
        "`bench/feedback_report.py`: three LoCoMo dev conversations, one container each; "
        "simulated agents use results with position bias (examined with probability 1/k) and "
        "20% of their judgments flipped; 3 in 10 questions are held out and never asked by an "
        "agent. NDCG@5 of the served order against the dataset's evidence, with the learned "
        "stage and without it, after the product trained (and promoted, or not) at each "
        "checkpoint.\n\n"
        + table(with_ipw, without)
        + f"\nCandidate recall@50 (what any reordering can reach): "
        f"{last['held_out/recall@50']:.4f} held out, {last['asked/recall@50']:.4f} asked.\n\n"
        f"![NDCG@5 against feedback events](benchmarks/{PLOT.name})\n\n"
    )
    write_section(args.out, "feedback", body)
    print(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
