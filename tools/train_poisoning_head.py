"""Write the poisoning heads this build ships, one per embedder tier, from the labelled corpora.

python tools/train_poisoning_head.py            # rewrite src/memory/data/poisoning_heads/
python tools/train_poisoning_head.py --check    # exit 1 if a shipped head is not what it
                                                # would write (weights to 1e-6)

Each tier's embedder embeds every text of ``TRAINING`` in ``tests/data/poisoning/`` (attacks
labelled 1, benign 0); ``mnemolog.memory.poisoning.fit.train`` fits the head and sets its cut.
Deterministic: the same corpora and embedder give the same head.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import msgspec
import numpy as np

from mnemolog.embedding.identity import EmbedderIdentity
from mnemolog.embedding.select import open_embedder
from mnemolog.memory.poisoning.fit import features_of, train
from mnemolog.memory.poisoning.head import HEADS_DIR, Head, head_file
from mnemolog.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "poisoning"
OUT = ROOT / "src" / "memory" / HEADS_DIR
# Every labelled set: (attacks, benign). A blind batch joins only once it has been measured.
TRAINING = {
    "corpus": ("attacks.jsonl", "benign.jsonl"),
    "blind3": ("blind3_attacks.jsonl", "blind3_benign.jsonl"),
    "blind4": ("blind4_attacks.jsonl", "blind4_benign.jsonl"),
    "train5a": ("train5a_attacks.jsonl", "train5a_benign.jsonl"),
    "train5b": ("train5b_attacks.jsonl", "train5b_benign.jsonl"),
}
VERSION = 1
TIERS = ("fast", "quality")
Embedded = tuple[EmbedderIdentity, np.ndarray]


def labelled() -> tuple[list[str], np.ndarray, dict[str, int]]:
    texts: list[str] = []
    labels: list[int] = []
    counts: dict[str, int] = {}
    for name, (attacks, benign) in TRAINING.items():
        for file, label in ((attacks, 1), (benign, 0)):
            rows = [
                json.loads(line)["text"]
                for line in (DATA / file).read_text(encoding="utf-8").splitlines()
            ]
            texts += rows
            labels += [label] * len(rows)
            counts[f"{name}_{'attacks' if label else 'benign'}"] = len(rows)
    return texts, np.array(labels), counts


def heads(embed: Callable[[str, list[str]], Embedded] | None = None) -> list[Head]:
    """Each tier's head; ``embed`` (tier, texts) may supply the vectors already computed."""
    texts, y, counts = labelled()
    out = []
    for tier in TIERS:
        identity, vectors = (embed or embedded)(tier, texts)
        out.append(train(identity, features_of(texts, vectors), y, counts, version=VERSION))
    return out


def embedded(tier: str, texts: list[str]) -> Embedded:
    embedder = open_embedder(tier, Settings().model_cache)
    return embedder.identity, embedder.embed(texts)


def same(a: Head, b: Head) -> bool:
    return (
        a.embedder == b.embedder
        and a.reasons == b.reasons
        and a.trained_on == b.trained_on
        and np.allclose(a.weights, b.weights, atol=1e-6)
        and abs(a.bias - b.bias) <= 1e-6
        and abs(a.cut - b.cut) <= 1e-6
    )


def stale(made: list[Head]) -> list[str]:
    """The shipped head files that are not what ``made`` holds."""
    out = []
    for head in made:
        path = OUT / head_file(head.embedder)
        shipped = msgspec.json.decode(path.read_bytes(), type=Head) if path.exists() else None
        if shipped is None or not same(shipped, head):
            out.append(path.name)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    made = heads()
    if args.check:
        if differ := stale(made):
            print(f"not what the corpora give: {', '.join(differ)}", file=sys.stderr)
            sys.exit(1)
        return
    OUT.mkdir(parents=True, exist_ok=True)
    for head in made:
        path = OUT / head_file(head.embedder)
        path.write_bytes(msgspec.json.format(msgspec.json.encode(head), indent=1) + b"\n")
        print(f"{path.relative_to(ROOT)}: cut {head.cut}, {len(head.weights)} weights")


if __name__ == "__main__":
    main()
