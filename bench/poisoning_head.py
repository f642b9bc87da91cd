"""How far a learned poisoning head carries to attacks written apart from its training texts.

The head (``mnemolog.memory.poisoning.head``, fitted by ``poisoning_fit``) is a logistic
regression over a text's embedding by the store's own embedder (fast or quality tier), here
also without the rules' reasons as extra features. It is trained on every labelled set of
``tests/data/poisoning/`` except one blind batch, and scored on that batch: how far a model
fitted to the project's own corpora carries to texts written apart from them, at the benign
budget the detector must keep (at most 2% of benign texts flagged).

For each tier and each held-out batch it prints: the rules alone on the batch; then, for each
cut set on the training benign texts (the share of them flagged: 0.5%, 1%, 2%), the head's
5-fold cross-validated recall on the training attacks beside its recall and benign rate on
the held-out batch, for the head alone, the head with the rules' reasons as features, and the
head or the rules. The fit is deterministic (Newton's method, L2 penalty ``--penalty``,
classes weighted to balance, folds from a fixed seed). No figure is asserted.

    .venv/bin/python bench/poisoning_head.py                   # both tiers, each blind batch
    .venv/bin/python bench/poisoning_head.py --tiers quality --json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mnemolog.embedding.select import open_embedder
from mnemolog.memory.poisoning.fit import (
    PENALTY,
    RULE_REASONS,
    features_of,
    fit,
    held_out_scores,
    scores,
)
from mnemolog.memory.poisoning.head import VETO
from mnemolog.memory.poisoning.rules import detect
from mnemolog.settings import Settings

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "poisoning"
SETS = {  # name -> (attacks file, benign file)
    "corpus": ("attacks.jsonl", "benign.jsonl"),
    "blind3": ("blind3_attacks.jsonl", "blind3_benign.jsonl"),
    "blind4": ("blind4_attacks.jsonl", "blind4_benign.jsonl"),
    "train5a": ("train5a_attacks.jsonl", "train5a_benign.jsonl"),
    "train5b": ("train5b_attacks.jsonl", "train5b_benign.jsonl"),
    "blind5": ("blind5_attacks.jsonl", "blind5_benign.jsonl"),
}
# Each held out in turn. Batch 5 was written after the shipped heads and is not in their
# training: held out, its row is the shipped heads' (trained on the other sets).
BLIND = ("blind3", "blind4", "blind5")
CUTS = (0.005, 0.01, 0.02)


def texts_of(name: str) -> tuple[list[str], NDArray[np.int64]]:
    attacks, benign = SETS[name]
    a = [
        json.loads(line)["text"]
        for line in (DATA / attacks).read_text(encoding="utf-8").splitlines()
    ]
    b = [
        json.loads(line)["text"]
        for line in (DATA / benign).read_text(encoding="utf-8").splitlines()
    ]
    return a + b, np.array([1] * len(a) + [0] * len(b))


def measure(
    train: NDArray[np.float64],
    y: NDArray[np.int64],
    test: NDArray[np.float64],
    y_test: NDArray[np.int64],
    rules_test: NDArray[np.bool_],
    penalty: float,
) -> dict[str, Any]:
    held = held_out_scores(train, y, penalty)
    test_scores = scores(fit(train, y, penalty), test)
    out: dict[str, Any] = {}
    for cut in CUTS:
        threshold = float(np.quantile(held[y == 0], 1 - cut))
        head = test_scores >= threshold
        either = head | rules_test
        # The shipped policy: a rule hit stands unless the head leans benign (score < 0.5).
        kept = head | (rules_test & (test_scores >= VETO))
        out[f"{cut:.3f}"] = {
            "cv_recall": float((held[y == 1] >= threshold).mean()),
            "recall": float(head[y_test == 1].mean()),
            "benign": float(head[y_test == 0].mean()),
            "or_rules_recall": float(either[y_test == 1].mean()),
            "or_rules_benign": float(either[y_test == 0].mean()),
            "policy_recall": float(kept[y_test == 1].mean()),
            "policy_benign": float(kept[y_test == 0].mean()),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiers", default="fast,quality")
    parser.add_argument("--penalty", type=float, default=PENALTY, help="L2 penalty")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cache = Settings().model_cache
    report: dict[str, Any] = {}
    for tier in args.tiers.split(","):
        embedder = open_embedder(tier, cache)
        vectors: dict[str, NDArray[np.float64]] = {}
        reasons: dict[str, NDArray[np.float64]] = {}
        flagged: dict[str, NDArray[np.bool_]] = {}
        labels: dict[str, NDArray[np.int64]] = {}
        width = len(RULE_REASONS)
        for name in SETS:
            texts, labels[name] = texts_of(name)
            both = features_of(texts, embedder.embed(texts))
            vectors[name], reasons[name] = both[:, :-width], both[:, -width:]
            flagged[name] = np.array([detect(text).flagged for text in texts])
        for blind in BLIND:
            kept = [n for n in SETS if n != blind]
            y = np.concatenate([labels[n] for n in kept])
            rules = flagged[blind]
            row: dict[str, Any] = {
                "rules": {
                    "recall": float(rules[labels[blind] == 1].mean()),
                    "benign": float(rules[labels[blind] == 0].mean()),
                }
            }
            for variant, parts in (("head", (vectors,)), ("head+reasons", (vectors, reasons))):
                train = np.hstack([np.concatenate([p[n] for n in kept]) for p in parts])
                test = np.hstack([p[blind] for p in parts])
                row[variant] = measure(train, y, test, labels[blind], rules, args.penalty)
            report[f"{tier}/{blind}"] = row
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for key, row in report.items():
        print(
            f"{key}: rules recall {row['rules']['recall']:.3f}, benign {row['rules']['benign']:.3f}"
        )
        for variant in ("head", "head+reasons"):
            for cut, m in row[variant].items():
                print(
                    f"  {variant:12} cut {cut}: cv recall {m['cv_recall']:.3f} | blind recall"
                    f" {m['recall']:.3f} benign {m['benign']:.3f} | or rules"
                    f" {m['or_rules_recall']:.3f} / {m['or_rules_benign']:.3f} | policy"
                    f" {m['policy_recall']:.3f} / {m['policy_benign']:.3f}"
                )


if __name__ == "__main__":
    main()
