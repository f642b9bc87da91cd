"""Recall that learns from use: a usage simulator on LoCoMo, and the learning curve.

Each LoCoMo conversation (dev share) is written into its own container, one turn per memory,
as ``bench/retrieval.py`` writes it. Its answerable questions are split by a hash of their id:
seven in ten are asked by agents (again and again, in a seeded random order), three in ten are
held out and never asked by an agent. The ground truth is the dataset's evidence turns, never
anything the feedback says.

A simulated agent (one of ``AGENTS`` per container: one agent's feedback past 600 an hour is not
counted, and a simulation packs hours into minutes) asks a question through the product's
``Recall.search`` (learned stage, exploration and all), is shown the ``SHOWN`` results, examines
the one at position k with probability ``k ** -ETA`` (position bias), judges each examined
result by the evidence with ``NOISE`` of its judgments flipped (it uses a wrong result, or
passes over a right one), and says what it used through ``Usage.used``: a ``recall.used``
event, as ``POST /recalls/{traceId}/used`` appends it. At each checkpoint (feedback events per
container) the product trains (``Trainer.train``: held-out share, promotion gate and all), and
every question is asked again with the learned stage on and off: NDCG@5 and recall_all@5 on
the held-out questions and on the asked ones (new recalls of them), and the candidates'
recall@50 (what any reordering can reach).

``--no-propensity`` runs the same simulation with the trainer's position-bias correction off
(uses weigh 1 wherever they were made), for the curve without it.

    .venv/bin/python bench/feedback.py [--conversations 3] [--checkpoints 0,100,250,500,1000]
        [--no-propensity] [--json] [--out docs/benchmarks.md]

Nothing is asserted; the goal (learned NDCG@5 on held-out questions >= unlearned + 0.05 at
1,000 events) is printed as met or not met.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from retrieval import DEFAULT_DATA, Haystack, Question, load_locomo, score, write_turns

from mnemolog.eventlog.events import RecallPerformed
from mnemolog.memory import Caller, RecallRequest
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

SHOWN = 10
ETA = 1.0  # examination falls as 1/k
NOISE = 0.2
HELD_OUT = 3  # of every 10 questions (by a hash of the id)
AGENTS = 40
GOAL = 0.05


@dataclass
class Container:
    haystack: Haystack
    runtime: Runtime
    turns_of: dict[str, frozenset[str]]  # version id -> the turns it holds
    asked: list[Question]
    held_out: list[Question]


def held_out(question: Question) -> bool:
    return int(hashlib.sha256(question.qid.encode()).hexdigest(), 16) % 10 < HELD_OUT


def open_container(haystack: Haystack, root: Path, tier: str) -> Container:
    runtime = Runtime(
        Settings(
            data_dir=root / haystack.tag,
            embedder=tier,
            log_map_size=256 << 20,
            ranker_train_every=0,  # trained at the checkpoints, as POST /ranker/train would
        )
    )
    turns_of: dict[str, set[str]] = defaultdict(set)
    for turn, outcome in write_turns(runtime.core, haystack):
        turns_of[outcome.version_id].add(turn.turn_id)
    answerable = [q for q in haystack.questions if q.answerable]
    return Container(
        haystack=haystack,
        runtime=runtime,
        turns_of={v: frozenset(t) for v, t in turns_of.items()},
        asked=[q for q in answerable if not held_out(q)],
        held_out=[q for q in answerable if held_out(q)],
    )


def ask(
    c: Container, question: Question, caller: Caller, *, learned: bool = True, limit: int = SHOWN
) -> RecallPerformed:
    request = RecallRequest(
        q=question.text, container_tag=c.haystack.tag, limit=limit, learned=learned
    )
    result = c.runtime.core.recall.search(request, origin="rest", actor=caller.actor("rest"))
    assert result.seq is not None
    (stored,) = c.runtime.log.read(from_seq=result.seq, limit=1)
    event = stored.record.event
    assert isinstance(event, RecallPerformed)
    return event


def one_feedback(c: Container, rng: random.Random) -> None:
    question = rng.choice(c.asked)
    caller = Caller(agent_id=f"agent-{rng.randrange(AGENTS)}")
    event = ask(c, question, caller)
    used = []
    for position, version in enumerate(event.served, start=1):
        if rng.random() >= position**-ETA:
            continue  # not examined
        useful = bool(c.turns_of.get(version, frozenset()) & question.gold)
        if rng.random() < NOISE:
            useful = not useful
        if useful:
            used.append(version)
    c.runtime.core.usage.used(event.recall_id, caller, "rest", version_ids=used)


def evaluate(c: Container, questions: list[Question]) -> dict[str, list[float]]:
    """NDCG@5 and recall_all@5 with the learned stage and without, and recall@50."""
    reader = Caller(agent_id="reader")  # gives no feedback: never explored on
    out: dict[str, list[float]] = defaultdict(list)
    for question in questions:
        for name, learned in (("learned", True), ("unlearned", False)):
            event = ask(c, question, reader, learned=learned)
            items = [c.turns_of.get(v, frozenset()) for v in event.served]
            figures = score(items, question.gold)
            out[f"{name}/ndcg@5"].append(figures["ndcg@5"])
            out[f"{name}/recall_all@5"].append(figures["recall_all@5"])
            if learned and "learned" in event.latency_ms:  # the stage's own trace time
                out["stage_ms"].append(event.latency_ms["learned"])
        pool = [c.turns_of.get(cand.version_id, frozenset()) for cand in event.candidates]
        found = frozenset().union(*pool) & question.gold if pool else frozenset()
        out["recall@50"].append(len(found) / len(question.gold))
    return out


def simulate(args: argparse.Namespace, correct: bool) -> list[dict[str, Any]]:
    rng = random.Random(args.seed)
    curve: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mnemolog-feedback-") as scratch:
        containers = [
            open_container(h, Path(scratch), args.tier)
            for h in load_locomo(args.data, args.conversations)
        ]
        for c in containers:
            c.runtime.core.ranking.correct_position = correct
        events = 0
        try:
            for checkpoint in sorted(int(n) for n in args.checkpoints.split(",")):
                while events < checkpoint:
                    for c in containers:
                        one_feedback(c, rng)
                    events += 1
                point: dict[str, Any] = {"events": checkpoint, "promoted": 0}
                figures: dict[str, list[float]] = defaultdict(list)
                train_s: list[float] = []
                for c in containers:
                    started = time.perf_counter()
                    trained = c.runtime.core.ranking.train(c.haystack.tag)
                    train_s.append(time.perf_counter() - started)
                    own = [t for t in trained if t.container_tag == c.haystack.tag]
                    point["promoted"] += sum(t.promoted for t in own)
                    point.setdefault("reasons", []).extend(t.reason for t in trained)
                    for name, values in evaluate(c, c.held_out).items():
                        figures[f"held_out/{name}"].extend(values)
                    for name, values in evaluate(c, c.asked).items():
                        figures[f"asked/{name}"].extend(values)
                    serving = c.runtime.core.ranker.serving(c.haystack.tag)
                    point.setdefault("serving", []).append(
                        None if serving is None else serving.digest[:12]
                    )
                    if serving is not None:
                        point["eta"] = c.runtime.core.ranker.propensity_of(serving.digest).eta
                point["train_s"] = round(max(train_s), 3)
                stage_ms = figures.pop("held_out/stage_ms", []) + figures.pop("asked/stage_ms", [])
                if stage_ms:  # the learned stage's time per recall, as its traces give it
                    point["stage_ms_p50"] = round(float(np.percentile(stage_ms, 50)), 3)
                    point["stage_ms_p95"] = round(float(np.percentile(stage_ms, 95)), 3)
                for name, values in figures.items():
                    point[name] = round(float(np.mean(values)), 4)
                point["held_out_questions"] = len(figures["held_out/learned/ndcg@5"])
                point["asked_questions"] = len(figures["asked/learned/ndcg@5"])
                curve.append(point)
                print(json.dumps(point), file=sys.stderr)
        finally:
            for c in containers:
                c.runtime.close()
    return curve


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversations", type=int, default=3)
    parser.add_argument("--checkpoints", default="0,100,250,500,1000")
    parser.add_argument("--tier", choices=("fast", "quality"), default="fast")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-propensity", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()
    curve = simulate(args, correct=not args.no_propensity)
    last = curve[-1]
    margin = last["held_out/learned/ndcg@5"] - last["held_out/unlearned/ndcg@5"]
    report = {
        "curve": curve,
        "propensity_correction": not args.no_propensity,
        "seconds": round(time.perf_counter() - started, 1),
        "held_out_margin": round(margin, 4),
        "goal_met": margin >= GOAL,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for p in curve:
            print(
                f"{p['events']:>5} events: NDCG@5 held-out {p['held_out/unlearned/ndcg@5']:.4f}"
                f" -> {p['held_out/learned/ndcg@5']:.4f}, asked"
                f" {p['asked/unlearned/ndcg@5']:.4f} -> {p['asked/learned/ndcg@5']:.4f};"
                f" recall@50 {p['held_out/recall@50']:.4f}; promoted {p['promoted']}"
            )
        print("goal", "met" if report["goal_met"] else "not met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
