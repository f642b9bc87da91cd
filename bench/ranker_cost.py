"""What the learned ranker costs: training per 100k labelled rows, and the learned stage's work
per recall of 50 candidates (features from the memories' histories, then the model's scores).

Synthetic but shaped like the product's data: recalls of 10 served results each, one or two
uses per recall at positions drawn with position bias, and the recall timed as its worst case:
160 earlier recalls of the same question (16 of its head's 20 memories in each of theirs, so
every one is alike and counts), each showing 10, so every memory of its head has a full
history of ``KEPT`` entries. Timings are the median of ``--rounds`` in this process, one
thread. ``stage_ms_after_others`` is the same recall in a container used for long:
``--others`` earlier recalls of other memories were given feedback before its candidates' own.

    .venv/bin/python bench/ranker_cost.py [--rows 100000] [--rounds 5] [--others 10000] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Sequence

import numpy as np

from mnemolog.eventlog.events import Candidate
from mnemolog.projections.ranker.examples import Example, pairs_of
from mnemolog.projections.ranker.features import (
    FEATURES,
    HEAD,
    KEPT,
    candidate_features,
    head_pool,
)
from mnemolog.projections.ranker.histories import Histories
from mnemolog.projections.ranker.model import Model, train
from mnemolog.projections.ranker.propensity import Propensity

SHOWN = 10
CANDIDATES = 50


def everyone(agents: Sequence[str]) -> list[bool]:
    return [True] * len(agents)


def examples(rows: int, rng: random.Random) -> list[Example]:
    out = []
    for n in range(rows // SHOWN):
        used = {i: "agent" for i in range(SHOWN) if rng.random() < 0.3 / (i + 1)}
        out.append(
            Example(
                recall_id=f"trc_{n}",
                container_tag="c",
                seq=n + 1,
                features=[[rng.random() for _ in FEATURES] for _ in range(SHOWN)],
                base=list(range(1, SHOWN + 1)),
                used=used,
                examined={"agent": None},
            )
        )
    return out


def stage_inputs(
    rng: random.Random, others: int = 0
) -> tuple[list[Candidate], Histories, frozenset[str]]:
    """The candidates, their histories and the recall's pool; ``others`` earlier recalls of
    other memories in the container come first (each of those a recall compares itself with,
    up to the window a container keeps)."""
    ids = [f"ver_{i}" for i in range(CANDIDATES)]
    candidates = [
        Candidate(
            version_id=v,
            similarity=rng.random(),
            bm25=rng.random() * 10,
            fused=rng.random(),
            vector_rank=i + 1,
            bm25_rank=i + 1,
            score=1.0 / (i + 1),
        )
        for i, v in enumerate(ids)
    ]
    # Earlier recalls of the same question: each head holds 16 of this recall's 20 (so each is
    # alike, and counts) and 4 of the other candidates, and showed 10 of them; so every one of
    # the head's memories has a full history that counts (its worst case).
    recalls = {
        f"trc_{r}": rng.sample(ids[:HEAD], 16) + rng.sample(ids[HEAD:], 4)
        for r in range(CANDIDATES * KEPT // SHOWN)
    }
    histories = Histories()
    for n in range(others):
        other = [f"other_{(7 * n + k) % 5000}" for k in range(HEAD)]
        for position, version in enumerate(other[:SHOWN], start=1):
            histories.note(version, "agent", f"trc_other_{n}", frozenset(other), position)
    for recall_id, pool in recalls.items():
        for position, version in enumerate(pool[:SHOWN], start=1):
            histories.note(
                version, "agent", recall_id, frozenset(pool), position, used=rng.random() < 0.3
            )
    return candidates, histories, frozenset(ids[:HEAD])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--others", type=int, default=10_000, help="earlier recalls of other memories, for"
        " the figure of a container used for long"
    )  # fmt: skip
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = random.Random(7)
    data = examples(args.rows, rng)
    propensity = Propensity(eta=1.0, swaps=100)
    pairs_s, train_s = [], []
    for _ in range(args.rounds):
        started = time.perf_counter()
        pairs = pairs_of(data, propensity, lambda agent: 1.0)
        pairs_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        model = train(pairs, through_seq=len(data))
        train_s.append(time.perf_counter() - started)
    candidates, histories, pool = stage_inputs(rng)
    observed = [0] * CANDIDATES
    trust = [0.9] * CANDIDATES
    ids = [c.version_id for c in candidates]
    stage_ms, all_ms = [], []
    for _ in range(args.rounds):
        started = time.perf_counter()
        for _ in range(100):
            stage(candidates, histories, observed, trust, model, propensity)
        stage_ms.append((time.perf_counter() - started) * 10)  # ms per recall
        started = time.perf_counter()
        for _ in range(100):
            sums = histories.sums(ids, pool, everyone, propensity.of)
            x = candidate_features(candidates, sums, observed, trust, 10**18)
            model.score(x)
        all_ms.append((time.perf_counter() - started) * 10)
    long_used = stage_inputs(rng, args.others)
    long_ms = []
    for _ in range(args.rounds):
        started = time.perf_counter()
        for _ in range(100):
            stage(long_used[0], long_used[1], observed, trust, model, propensity)
        long_ms.append((time.perf_counter() - started) * 10)
    report = {
        "labelled_rows": len(data) * SHOWN,
        "pairs": len(pairs.weight),
        "pairs_s": round(statistics.median(pairs_s), 3),
        "train_s": round(statistics.median(train_s), 3),
        "stage_ms_per_recall_of_50": round(statistics.median(stage_ms), 3),
        "all_50_scored_ms": round(statistics.median(all_ms), 3),
        # the same recall after ``--others`` earlier recalls with feedback in its container
        "stage_ms_after_others": round(statistics.median(long_ms), 3),
        "others": args.others,
        "score_only_ms": round(_score_only(model, np.asarray(x)), 4),
    }
    print(json.dumps(report, indent=2) if args.json else report)
    return 0


def stage(
    candidates: list[Candidate],
    histories: Histories,
    observed: list[int],
    trust: list[float],
    model: Model,
    propensity: Propensity,
) -> list[int]:
    """What the learned stage does in a recall of these candidates: the pool of the recall's
    head, the head's record sums and features, the model's scores, the head's new order."""
    pool = head_pool(candidates)
    head = candidates[:HEAD]
    sums = histories.sums([c.version_id for c in head], pool, everyone, propensity.of)
    x = candidate_features(head, sums, observed[:HEAD], trust[:HEAD], 10**18)
    scores = model.score(x)
    return sorted(range(len(head)), key=lambda i: (-scores[i], i))


def _score_only(model: object, x: np.ndarray) -> float:
    assert hasattr(model, "score")
    started = time.perf_counter()
    for _ in range(1000):
        model.score(x)
    return time.perf_counter() - started  # ms per call: 1000 calls, seconds -> ms


if __name__ == "__main__":
    sys.exit(main())
