"""How well the write decision tells a correction from a distinct fact, on a labelled corpus.

Reads the pairs of ``tests/data/write_pairs/`` (``dev.jsonl``, the split a rule is designed on,
and ``holdout.jsonl``, kept aside to check it on texts it was not designed on): each is an old
memory and a new one, labelled ``correction`` (the new one replaces the old), ``distinct`` (both
are true at once) or ``duplicate`` (the same text again, trivially changed). For each embedder
tier, opened in process, every pair's two texts are embedded (in batches) and their cosine (a dot
product: the vectors have norm 1) goes to ``mnemolog.memory.writing.sameness.judge`` with the
gates of that embedder. Beside it runs the legacy rule, computed here: ``same`` when the cosine
is at least 0.85 and the Jaccard of the two texts' plain words at least 0.5, else ``distinct``.

Printed per tier and split: each category's verdicts (same / possible / distinct) with its
median cosine and word overlap (the Jaccard of plain words, as the legacy rule takes it), then
the headline figures of both rules:

- supersede precision: (corrections + duplicates judged same) / all judged same;
- distinct hidden: distinct pairs judged same / all distinct pairs (a user's fact hidden);
- correction recall: corrections judged same / all corrections;
- corrections at least linked: corrections judged same or possible / all corrections;
- duplicates merged: duplicates judged same / all duplicates.

No figure is asserted.

    .venv/bin/python bench/write_rule.py [--tiers fast,quality] [--split dev,holdout]
        [--show-errors] [--json] [--arbiter-url URL [--arbiter-model NAME]]

With ``--arbiter-url`` (an OpenAI-compatible base URL such as ``http://127.0.0.1:8081/v1``),
every pair the judge leaves unsure (``possible``) is also put to that model as the product's
arbitration would put it (``proxy/arbiter.py``, the same prompt and timeout), and a third
column of figures shows the judge with arbitration: ``same`` or ``update`` supersedes,
``different`` keeps both, a failure keeps both linked.

The fast tier is distilled into ``--model-cache-dir`` (default ``~/.cache/mnemolog/models``)
the first time, which takes about 30 s.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mnemolog.embedding import Embedder, open_embedder
from mnemolog.memory.writing.sameness import Judgement, Verdict, gates_for, judge
from mnemolog.projections.fulltext.analysis import plain_words
from mnemolog.proxy.arbiter import UpstreamArbiter
from mnemolog.settings import Settings

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO / "tests" / "data" / "write_pairs"
DEFAULT_CACHE = Path.home() / ".cache" / "mnemolog" / "models"
TIERS = ("fast", "quality")
SPLITS = ("dev", "holdout")
LABELS = ("correction", "distinct", "duplicate")
VERDICTS: tuple[Verdict, ...] = ("same", "possible", "distinct")
BATCH = 64  # texts per embed call
LEGACY_COSINE = 0.85  # the legacy rule: a near duplicate ...
LEGACY_SHARED = 0.5  # ... that shares at least half of the two texts' distinct words


@dataclass(frozen=True)
class Pair:
    id: str
    category: str
    label: str
    old: str
    new: str


@dataclass(frozen=True)
class Scored:
    pair: Pair
    similarity: float
    shared: float  # the Jaccard of the two texts' plain words (what the legacy rule looks at)
    judgement: Judgement
    legacy: Verdict
    arbitrated: Verdict | None = None  # the verdict with arbitration, when an arbiter was asked


def load(path: Path) -> list[Pair]:
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            pairs.append(Pair(row["id"], row["category"], row["label"], row["old"], row["new"]))
    return pairs


def shared_words(old: str, new: str) -> float:
    """The Jaccard of the two texts' plain words (1.0 when neither has any)."""
    a, b = plain_words(old), plain_words(new)
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def legacy(shared: float, similarity: float) -> Verdict:
    """The legacy rule: a near duplicate that shares half of its words."""
    if similarity >= LEGACY_COSINE and shared >= LEGACY_SHARED:
        return "same"
    return "distinct"


def embed_all(embedder: Embedder, texts: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
    """Each distinct text's vector, embedded ``BATCH`` at a time."""
    unique = list(dict.fromkeys(texts))
    vectors: dict[str, npt.NDArray[np.float32]] = {}
    for start in range(0, len(unique), BATCH):
        chunk = unique[start : start + BATCH]
        vectors.update(zip(chunk, embedder.embed(chunk), strict=True))
    return vectors


def score(pairs: Sequence[Pair], embedder: Embedder) -> list[Scored]:
    vectors = embed_all(embedder, [text for pair in pairs for text in (pair.old, pair.new)])
    gates = gates_for(embedder.identity.name)
    out = []
    for pair in pairs:
        similarity = float(np.dot(vectors[pair.old], vectors[pair.new]))
        shared = shared_words(pair.old, pair.new)
        judgement = judge(pair.old, pair.new, similarity, gates)
        out.append(Scored(pair, similarity, shared, judgement, legacy(shared, similarity)))
    return out


# --- figures ----------------------------------------------------------------------------------


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def headline(verdicts: Sequence[tuple[str, Verdict]]) -> dict[str, Any]:
    """The headline figures of one rule, from (label, verdict) pairs."""

    def count(labels: tuple[str, ...], kinds: tuple[Verdict, ...]) -> int:
        return sum(1 for label, verdict in verdicts if label in labels and verdict in kinds)

    judged_same = count(LABELS, ("same",))
    right_same = count(("correction", "duplicate"), ("same",))
    corrections = count(("correction",), VERDICTS)
    distinct = count(("distinct",), VERDICTS)
    duplicates = count(("duplicate",), VERDICTS)
    hidden = count(("distinct",), ("same",))
    recalled = count(("correction",), ("same",))
    linked = count(("correction",), ("same", "possible"))
    merged = count(("duplicate",), ("same",))
    return {
        "supersede_precision": _share(right_same, judged_same),
        "judged_same": judged_same,
        "judged_same_right": right_same,
        "distinct_hidden": _share(hidden, distinct),
        "distinct_hidden_count": hidden,
        "distinct_total": distinct,
        "correction_recall": _share(recalled, corrections),
        "corrections_same": recalled,
        "corrections_linked": _share(linked, corrections),
        "corrections_same_or_possible": linked,
        "correction_total": corrections,
        "duplicates_merged": _share(merged, duplicates),
        "duplicates_same": merged,
        "duplicate_total": duplicates,
    }


def categories(scored: Sequence[Scored]) -> dict[str, dict[str, Any]]:
    """Per category, in label order then corpus order: its verdicts under both rules and the
    median cosine and word overlap of its pairs."""
    order = sorted(
        dict.fromkeys(s.pair.category for s in scored),
        key=lambda c: LABELS.index(next(s.pair.label for s in scored if s.pair.category == c)),
    )
    out: dict[str, dict[str, Any]] = {}
    for category in order:
        rows = [s for s in scored if s.pair.category == category]
        out[category] = {
            "label": rows[0].pair.label,
            "pairs": len(rows),
            "judge": {v: sum(1 for s in rows if s.judgement.verdict == v) for v in VERDICTS},
            "legacy": {v: sum(1 for s in rows if s.legacy == v) for v in ("same", "distinct")},
            "cosine_median": statistics.median(s.similarity for s in rows),
            "shared_words_median": statistics.median(s.shared for s in rows),
        }
    return out


def errors(scored: Sequence[Scored]) -> list[dict[str, Any]]:
    """The pairs ``judge`` got wrong: a distinct pair judged same, a correction or a duplicate
    not judged same."""
    out = []
    for s in scored:
        verdict = s.judgement.verdict
        wrong = (s.pair.label == "distinct") == (verdict == "same")
        if wrong:
            out.append(
                {
                    "id": s.pair.id,
                    "label": s.pair.label,
                    "verdict": verdict,
                    "reason": s.judgement.reason,
                    "similarity": s.similarity,
                    "shared_words": s.shared,
                    "old": s.pair.old,
                    "new": s.pair.new,
                }
            )
    return out


def arbitrate(scored: Sequence[Scored], arbiter: UpstreamArbiter) -> list[Scored]:
    """Each unsure pair put to the model: its ruling decides it, a failure keeps it unsure."""
    out = []
    failures: dict[str, int] = {}
    for s in scored:
        verdict = s.judgement.verdict
        if verdict == "possible":
            ruling = arbiter.arbitrate(s.pair.old, s.pair.new)
            if ruling.ruling is None:
                failures[ruling.failure or "?"] = failures.get(ruling.failure or "?", 0) + 1
            else:
                verdict = "distinct" if ruling.ruling == "different" else "same"
        out.append(dataclasses.replace(s, arbitrated=verdict))
    if failures:
        print(f"arbitration failures: {failures}", file=sys.stderr)
    return out


def report_split(scored: Sequence[Scored], show_errors: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "pairs": len(scored),
        "categories": categories(scored),
        "judge": headline([(s.pair.label, s.judgement.verdict) for s in scored]),
        "legacy": headline([(s.pair.label, s.legacy) for s in scored]),
    }
    if any(s.arbitrated is not None for s in scored):
        out["arbitrated"] = headline([(s.pair.label, s.arbitrated or "possible") for s in scored])
    if show_errors:
        out["errors"] = errors(scored)
    return out


# --- printing ---------------------------------------------------------------------------------


def _ratio(value: float | None, part: int, whole: int) -> str:
    return "n/a" if value is None else f"{value:.3f} ({part}/{whole})"


def print_split(tier: str, split: str, figures: dict[str, Any], run: dict[str, Any]) -> None:
    gates = run["gates"]
    print(
        f"== {tier} tier, {split} ({figures['pairs']} pairs): {run['embedder']}; judge's gates"
        f" same {gates['same']:.2f}, possible {gates['possible']:.2f} =="
    )
    print(
        f"{'category':30} {'label':10} {'n':>4} | {'judge: same':>11} {'poss':>5} {'dist':>5}"
        f" | {'legacy: same':>12} {'dist':>5} | {'cos p50':>7} {'words p50':>9}"
    )
    for name, row in figures["categories"].items():
        j, legacy_row = row["judge"], row["legacy"]
        print(
            f"{name:30} {row['label']:10} {row['pairs']:>4} | {j['same']:>11} {j['possible']:>5}"
            f" {j['distinct']:>5} | {legacy_row['same']:>12} {legacy_row['distinct']:>5} |"
            f" {row['cosine_median']:>7.3f} {row['shared_words_median']:>9.2f}"
        )
    print()
    ours, base = figures["judge"], figures["legacy"]
    lines = (
        ("supersede precision", "supersede_precision", "judged_same_right", "judged_same"),
        ("distinct hidden", "distinct_hidden", "distinct_hidden_count", "distinct_total"),
        ("correction recall", "correction_recall", "corrections_same", "correction_total"),
        (
            "corrections at least linked",
            "corrections_linked",
            "corrections_same_or_possible",
            "correction_total",
        ),
        ("duplicates merged", "duplicates_merged", "duplicates_same", "duplicate_total"),
    )
    arbitrated = figures.get("arbitrated")
    extra = f"   {'judge + arbiter':>18}" if arbitrated else ""
    print(f"{'':30} {'judge':>18}   {'legacy':>18}{extra}")
    for title, key, part, whole in lines:
        third = ""
        if arbitrated:
            third = f"   {_ratio(arbitrated[key], arbitrated[part], arbitrated[whole]):>18}"
        print(
            f"{title:30} {_ratio(ours[key], ours[part], ours[whole]):>18}"
            f"   {_ratio(base[key], base[part], base[whole]):>18}{third}"
        )
    if "errors" in figures:
        wrong = figures["errors"]
        for title, picked in (
            ("distinct pairs judged same", [e for e in wrong if e["label"] == "distinct"]),
            ("corrections not judged same", [e for e in wrong if e["label"] == "correction"]),
            ("duplicates not judged same", [e for e in wrong if e["label"] == "duplicate"]),
        ):
            print(f"\n{title} ({len(picked)}):")
            for e in picked:
                print(
                    f"  {e['id']:34} cos {e['similarity']:.3f}  words {e['shared_words']:.2f}"
                    f"  {e['verdict']}/{e['reason']}"
                )
                print(f"      old: {e['old']!r}")
                print(f"      new: {e['new']!r}")
    print()


def _names(raw: str, known: tuple[str, ...], parser: argparse.ArgumentParser) -> list[str]:
    names = [name.strip() for name in raw.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        parser.error(f"{raw!r}: use a comma-separated list of {', '.join(known)}")
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiers", default="fast,quality", help="comma-separated: fast,quality")
    parser.add_argument("--split", default="dev,holdout", help="comma-separated: dev,holdout")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the corpus folder")
    parser.add_argument("--model-cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument(
        "--show-errors",
        action="store_true",
        help="list every distinct pair judged same and every correction not judged same",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--arbiter-url", help="put unsure pairs to this OpenAI-compatible model")
    parser.add_argument("--arbiter-model", help="the model named in arbitration requests")
    parser.add_argument("--arbiter-timeout", type=float, default=3.0, help="seconds per pair")
    args = parser.parse_args()
    arbiter = None
    if args.arbiter_url:
        arbiter = UpstreamArbiter(
            Settings(
                upstream_base_url=args.arbiter_url,
                arbitration=True,
                arbitration_model=args.arbiter_model,
                arbitration_timeout=args.arbiter_timeout,
            )
        )
    tiers = _names(args.tiers, TIERS, parser)
    splits = _names(args.split, SPLITS, parser)
    corpus = {split: load(args.data / f"{split}.jsonl") for split in splits}

    out: dict[str, Any] = {
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}",
        "corpus": {split: len(pairs) for split, pairs in corpus.items()},
        "tiers": {},
    }
    for tier in tiers:
        started = time.perf_counter()
        embedder = open_embedder(tier, args.model_cache_dir)
        opened_s = time.perf_counter() - started
        gates = gates_for(embedder.identity.name)
        run: dict[str, Any] = {
            "embedder": embedder.identity.describe(),
            "gates": {"same": gates.same, "possible": gates.possible},
            "open_s": opened_s,
            "splits": {},
        }
        for split, pairs in corpus.items():
            started = time.perf_counter()
            scored = score(pairs, embedder)
            if arbiter is not None:
                scored = arbitrate(scored, arbiter)
            print(
                f"{tier}, {split}: {len(pairs)} pairs scored in"
                f" {time.perf_counter() - started:.1f} s",
                file=sys.stderr,
            )
            run["splits"][split] = report_split(scored, args.show_errors)
        out["tiers"][tier] = run
        del embedder

    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"machine: {out['machine']}; corpus: {out['corpus']}")
    print()
    for tier, run in out["tiers"].items():
        for split, figures in run["splits"].items():
            print_split(tier, split, figures, run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
