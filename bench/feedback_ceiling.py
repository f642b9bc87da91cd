"""How far can feedback on some questions carry to questions nobody asked? Upper bounds on
LoCoMo, for the held-out half of ``bench/feedback.py``.

The same containers and the same split as ``feedback.py`` (seven in ten questions asked, three
in ten held out). Every question is recalled once without the learned stage; its head (the
first 20 served, in the order served: what the stage reorders) is what any reordering can
work with. Then two kinds of learning are given more than any learner gets, and NDCG@5 on the
held-out questions is measured:

- **Memory transfer** (what a memory's record can carry): the labels are perfect and complete
  (every asked question's evidence in its head is known to be used, with no noise and no
  position bias), and a held-out question's candidate is raised by ``beta`` times how alike
  it is to the most alike asked question it answered (the Jaccard overlap of their heads, or
  the cosine of the two questions' vectors). ``beta`` and a floor are chosen on the held-out
  questions themselves, so the figure is a ceiling, not an estimate.
- **Query-level weights** (what a per-container model over the logged scores can carry):
  linear weights over the logged stage scores (similarity, BM25, fused, the reciprocal ranks)
  on top of the served order, searched on a grid against perfect labels: chosen on the asked
  questions (what a learner could do), and chosen on the held-out ones (a ceiling).

Beside them, an oracle that raises exactly the held-out question's evidence that was also some
asked question's evidence: what knowing which earlier use applies would give.

    .venv/bin/python bench/feedback_ceiling.py [--conversations 3] [--json]
        [--out docs/benchmarks.md]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from feedback import GOAL, Container, ask, open_container
from retrieval import DEFAULT_DATA, Question, load_locomo, score
from sections import write_section

from mnemolog.eventlog.events import Candidate
from mnemolog.memory import Caller

HEAD = 20
BETAS = (0.25, 0.5, 1.0, 2.0, 4.0)
FLOORS = (0.0, 0.3, 0.5, 0.7)
GRID = (-1.0, -0.5, 0.0, 0.5, 1.0, 2.0)  # per logged score, in its standard deviations


@dataclass
class Asked:
    question: Question
    head: list[Candidate]
    vector: npt.NDArray[np.float32]  # the question's, unit length
    gold: list[bool]  # per head candidate: holds the question's evidence

    @property
    def pool(self) -> frozenset[str]:
        return frozenset(c.version_id for c in self.head)


def recalled(c: Container, question: Question) -> Asked:
    event = ask(c, question, Caller(agent_id="reader"), learned=False, limit=50)
    by_version = {x.version_id: x for x in event.candidates}
    head = [by_version[v] for v in event.served[:HEAD]]  # in the order served
    vector = c.runtime.core.embedder.embed_queries([question.text])[0]
    return Asked(
        question=question,
        head=head,
        vector=vector / np.linalg.norm(vector),
        gold=[bool(c.turns_of.get(x.version_id, frozenset()) & question.gold) for x in head],
    )


def ndcg5(c: Container, a: Asked, order: Sequence[int]) -> float:
    items = [c.turns_of.get(a.head[i].version_id, frozenset()) for i in order]
    return score(items, a.question.gold)["ndcg@5"]


def reordered(bonus: npt.NDArray[np.float64]) -> list[int]:
    """The head's order raised by ``bonus``, from the served order's own -log(1 + position)."""
    base = -np.log1p(np.arange(len(bonus)))
    return [int(i) for i in np.argsort(-(base + bonus), kind="stable")]


def logged_scores(a: Asked) -> npt.NDArray[np.float64]:
    return np.array(
        [
            [
                x.similarity or 0.0,
                x.bm25 or 0.0,
                x.fused,
                1.0 / (8 + (x.vector_rank or 60)),
                1.0 / (8 + (x.bm25_rank or 60)),
            ]
            for x in a.head
        ]
    ).reshape(len(a.head), 5)


Bonuses = dict[str, list[npt.NDArray[np.float64]]]  # per setting, one per held-out question


def memory_transfer(
    c: Container, asked: list[Asked], held: list[Asked], bonuses: Bonuses
) -> dict[str, list[float]]:
    answered: dict[str, list[Asked]] = {}  # version -> the asked questions it answered
    for a in asked:
        for x, gold in zip(a.head, a.gold, strict=True):
            if gold:
                answered.setdefault(x.version_id, []).append(a)
    out: dict[str, list[float]] = {}
    for h in held:
        out.setdefault("unlearned", []).append(ndcg5(c, h, range(len(h.head))))
        ideal = sorted(range(len(h.head)), key=lambda i: not h.gold[i])
        out.setdefault("any reordering (evidence first)", []).append(ndcg5(c, h, ideal))
        oracle = np.array(
            [4.0 * (g and x.version_id in answered) for x, g in zip(h.head, h.gold, strict=True)]
        )
        out.setdefault("oracle: the earlier uses that apply", []).append(
            ndcg5(c, h, reordered(oracle))
        )
        for kind in ("head jaccard", "question cosine"):
            likeness = np.zeros(len(h.head))
            for i, x in enumerate(h.head):
                for a in answered.get(x.version_id, []):
                    if kind == "head jaccard":
                        alike = len(a.pool & h.pool) / len(a.pool | h.pool)
                    else:
                        alike = float(a.vector @ h.vector)
                    likeness[i] = max(likeness[i], alike)
            for beta, floor in itertools.product(BETAS, FLOORS):
                bonus = beta * np.where(likeness >= floor, likeness, 0.0)
                key = f"memory transfer, {kind}, beta {beta}, floor {floor}"
                out.setdefault(key, []).append(ndcg5(c, h, reordered(bonus)))
                bonuses.setdefault(key, []).append(bonus)
    return out


def query_weights(
    shares: dict[str, list[tuple[Container, Asked, npt.NDArray[np.float64]]]],
    transfer: list[npt.NDArray[np.float64]],
) -> dict[str, float]:
    """The grid's best weights by the asked questions and by the held-out ones, and the best
    by the held-out ones on top of ``transfer`` (one bonus per held-out question)."""
    spread = np.vstack([x for _, _, x in shares["asked"]]).std(axis=0)
    spread[spread == 0] = 1.0
    shares = {**shares, "both": shares["held"]}
    extra = {
        "asked": [0.0] * len(shares["asked"]),
        "held": [0.0] * len(shares["held"]),
        "both": transfer,
    }

    def mean_ndcg(share: str, w: npt.NDArray[np.float64]) -> float:
        return float(
            np.mean(
                [
                    ndcg5(c, a, reordered((x / spread) @ w + bonus))
                    for (c, a, x), bonus in zip(shares[share], extra[share], strict=True)
                ]
            )
        )

    best: dict[str, tuple[float, npt.NDArray[np.float64]]] = {}
    for w in itertools.product(GRID, repeat=5):
        weights = np.array(w)
        for share in ("asked", "held", "both"):
            value = mean_ndcg(share, weights)
            if value > best.get(share, (-1.0, weights))[0]:
                best[share] = (value, weights)
    return {
        "stage-score weights chosen on the asked questions": mean_ndcg("held", best["asked"][1]),
        "stage-score weights chosen on the held-out questions": best["held"][0],
        "both, the best transfer and weights chosen on the held-out questions": best["both"][0],
    }


def section(report: dict[str, Any], weights: dict[str, float]) -> str:
    base = report["unlearned"]
    rows = [
        ("without the learned stage", base),
        ("any reordering of the head (the evidence first)", report["any_reordering"]),
        (
            "oracle: raise the held-out question's evidence that answered an asked one",
            report["oracle_uses_that_apply"],
        ),
        *(
            (f"memory transfer by {kind} ({name.split(', ', 2)[2]}), chosen on the held-out", v)
            for kind, (v, name) in report["best_memory_transfer"].items()
        ),
        *weights.items(),
    ]
    lines = [
        "### How far feedback can carry to questions nobody asked",
        "",
        f"`python bench/feedback_ceiling.py --out docs/benchmarks.md`: the same containers and "
        f"split, {report['held_out_questions']} held-out questions, the head of 20 as served "
        "without the learned stage. Every learner here is given perfect, complete labels (each "
        "asked question's evidence in its head), where the simulator's agents are noisy and "
        "see what is shown; rows chosen on the held-out questions are ceilings, not estimates. "
        f"The goal is {report['goal']:.4f} (+{report['goal'] - base:.2f}).",
        "",
        "| reordering of the held-out questions' heads | NDCG@5 | margin |",
        "|---|---:|---:|",
        *(f"| {name} | {v:.4f} | {v - base:+.4f} |" for name, v in rows),
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversations", type=int, default=3)
    parser.add_argument("--tier", choices=("fast", "quality"), default="fast")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", type=Path, help="write the table into this page")
    args = parser.parse_args()
    started = time.perf_counter()
    figures: dict[str, list[float]] = {}
    bonuses: Bonuses = {}
    shares: dict[str, list[tuple[Container, Asked, npt.NDArray[np.float64]]]] = {
        "asked": [],
        "held": [],
    }
    with tempfile.TemporaryDirectory(prefix="mnemolog-ceiling-") as scratch:
        containers = [
            open_container(h, Path(scratch), args.tier)
            for h in load_locomo(args.data, args.conversations)
        ]
        try:
            for c in containers:
                asked = [recalled(c, q) for q in c.asked]
                held = [recalled(c, q) for q in c.held_out]
                for name, values in memory_transfer(c, asked, held, bonuses).items():
                    figures.setdefault(name, []).extend(values)
                shares["asked"] += [(c, a, logged_scores(a)) for a in asked]
                shares["held"] += [(c, a, logged_scores(a)) for a in held]
            means = {name: float(np.mean(v)) for name, v in figures.items()}
            transfers = {k: v for k, v in means.items() if k.startswith("memory transfer")}
            best = {
                kind: max((v, k) for k, v in transfers.items() if kind in k)
                for kind in ("head jaccard", "question cosine")
            }
            _, strongest = max(best.values())
            weights = query_weights(shares, bonuses[strongest])
        finally:
            for c in containers:
                c.runtime.close()
    unlearned = means.pop("unlearned")
    report: dict[str, Any] = {
        "held_out_questions": len(figures["unlearned"]),
        "unlearned": round(unlearned, 4),
        "any_reordering": round(means["any reordering (evidence first)"], 4),
        "oracle_uses_that_apply": round(means["oracle: the earlier uses that apply"], 4),
        "best_memory_transfer": {k: [round(v, 4), name] for k, (v, name) in best.items()},
        "stage_score_weights": {k: round(v, 4) for k, v in weights.items()},
        "goal": round(unlearned + GOAL, 4),
        "seconds": round(time.perf_counter() - started, 1),
    }
    if args.out is not None:
        write_section(args.out, "feedback_ceiling", section(report, weights))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"held-out questions: {report['held_out_questions']}; NDCG@5 unlearned "
              f"{unlearned:.4f}, goal {report['goal']:.4f}")  # fmt: skip
        print(f"  any reordering of the head (evidence first): {report['any_reordering']:.4f}")
        print(f"  oracle, the earlier uses that apply: {report['oracle_uses_that_apply']:.4f}")
        for kind, (value, name) in best.items():
            print(f"  best {kind} transfer ({name}): {value:.4f}")
        for name, value in weights.items():
            print(f"  {name}: {value:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
