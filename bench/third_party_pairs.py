"""Correction pairs and distinct pairs built from text nobody in the project wrote.

The write rule and the ranking of corrections are designed on the project's own labelled pairs
(``tests/data/write_pairs/``) and on the templates of ``factgen.py`` and ``corrections.py``. This
script builds pairs from third-party evaluation data instead, at run time, from where the data
lies: nothing of it is copied into the repository. Every pair is one of

- ``correction``: one subject, an older value and a newer one. ``older`` is the text that gave
  the old value, ``newer`` the text that changed it, ``question`` what a user would then ask,
  and ``answer_text`` is ``newer``;
- ``distinct``: two facts that are both true and look alike. ``answer_text`` is ``both``: with
  one ``question`` both texts answer it together; when ``newer_question`` is set, ``question``
  is the older fact's own question and ``newer_question`` the newer's.

Each pair has ``id``, ``source``, ``licence`` and ``split``: every source is cut in two by a
hash of its item id (the first byte of ``sha256("<source>:<item id>")``, even: ``dev``, odd:
``heldout``), so that a rule can be designed on one half and checked on the other. All pairs of
one item (one question, one conversation's question) fall on the same side.

The sources and how each pair is built:

- ``longmemeval-ku`` (LongMemEval, Wu et al., ICLR 2025; MIT, (c) 2024 Di Wu; the share in
  ``<data>/dev/longmemeval_oracle_dev.json``): every answerable ``knowledge-update`` question
  has two evidence sessions, an older value and a newer one. ``older`` is the user turn marked
  ``has_answer`` in the earlier session, ``newer`` the one in the later session (a question
  whose session holds two such turns, or none, is left out), both verbatim: the user's own
  words, a whole chat turn each. ``question`` is the benchmark's question. These are the
  narrative kind: the new value told in passing, in a turn about something else.
- ``longmemeval-multi`` (the same file and licence): every answerable ``multi-session`` and
  ``temporal-reasoning`` question whose evidence lies in two or more sessions, one user turn
  each, gives a ``distinct`` pair: the turns of its first two evidence sessions in date order,
  and the benchmark's question, which needs both (how many X in total; which came first).
  Knowledge-update questions are not among them.
- ``locomo-singlehop`` (LoCoMo, Maharana et al., ACL 2024; CC BY-NC 4.0, evaluation only; the
  share in ``<data>/dev/locomo10_dev.json``): single-hop questions (category 4) with one
  evidence turn, paired within one conversation: two questions whose evidence turns are
  different turns of the same speaker, the pairs chosen greedily by the highest word overlap
  of the two turns (Jaccard of lowercase words, at least 0.15), each question in one pair at
  most. The texts are the turns as the recipe writes them (``"<speaker>: <text>"``), the
  questions the benchmark's, one for each.
- ``memtrust`` (memtrust-cli 0.3.8; Apache-2.0; ``<data>/correction/memtrust/
  contradiction_cases.json``): seven ``correction`` cases, ``initial_fact`` then
  ``contradicting_fact`` and ``query``. The file marks them synthetic: written by memtrust's
  authors, not by users.

``<data>`` is ``--data`` (default ``/work/shared/bench-data``); a source whose file is absent is
skipped and said so. Prints per source and split how many pairs of each kind it gave, and
writes them all as one JSON list to ``--out`` (default ``/tmp/third_party_pairs.json``: the
pairs hold third-party text and stay outside the repository).

    .venv/bin/python bench/third_party_pairs.py [--data DIR] [--out FILE] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

DEFAULT_DATA = Path("/work/shared/bench-data")
DEFAULT_OUT = Path("/tmp/third_party_pairs.json")
SPLITS = ("dev", "heldout")
KINDS = ("correction", "distinct")
LME_DATE = "%Y/%m/%d (%a) %H:%M"
LOCOMO_MIN_OVERLAP = 0.15

Kind = Literal["correction", "distinct"]
Answer = Literal["older", "newer", "both"]


@dataclass(frozen=True)
class Pair:
    id: str
    source: str
    licence: str
    split: str
    kind: Kind
    older: str
    newer: str
    question: str
    answer_text: Answer
    newer_question: str | None = None  # a distinct pair's second question, when each has one


def split_of(source: str, item: str) -> str:
    """``dev`` or ``heldout``, fixed by a hash of the item: the same on every run."""
    return SPLITS[hashlib.sha256(f"{source}:{item}".encode()).digest()[0] % 2]


# --- LongMemEval ------------------------------------------------------------------------------

LME_LICENCE = "MIT (LongMemEval, (c) 2024 Di Wu)"


def _lme_questions(data: Path) -> list[dict[str, Any]] | None:
    path = data / "dev" / "longmemeval_oracle_dev.json"
    if not path.exists():
        return None
    questions: list[dict[str, Any]] = json.loads(path.read_text())
    return [q for q in questions if not q["question_id"].endswith("_abs")]


def _evidence_by_session(question: dict[str, Any]) -> list[tuple[datetime, list[str]]]:
    """(date, the user turns marked ``has_answer``) of each evidence session, in date order
    (list order on a tie)."""
    sessions = []
    for date, turns in zip(question["haystack_dates"], question["haystack_sessions"], strict=True):
        said = [t["content"] for t in turns if t["role"] == "user" and t["has_answer"]]
        if said:
            sessions.append((datetime.strptime(date, LME_DATE), said))
    return sorted(sessions, key=lambda s: s[0])


def longmemeval_ku(data: Path) -> list[Pair] | None:
    questions = _lme_questions(data)
    if questions is None:
        return None
    pairs = []
    for q in questions:
        if q["question_type"] != "knowledge-update":
            continue
        sessions = _evidence_by_session(q)
        if len(sessions) != 2 or any(len(said) != 1 for _, said in sessions):
            continue
        (older,), (newer,) = (said for _, said in sessions)
        source = "longmemeval-ku"
        pairs.append(
            Pair(
                f"{source}:{q['question_id']}",
                source,
                LME_LICENCE,
                split_of(source, q["question_id"]),
                "correction",
                older,
                newer,
                q["question"],
                "newer",
            )
        )
    return pairs


def longmemeval_multi(data: Path) -> list[Pair] | None:
    questions = _lme_questions(data)
    if questions is None:
        return None
    pairs = []
    for q in questions:
        if q["question_type"] not in ("multi-session", "temporal-reasoning"):
            continue
        sessions = [said for _, said in _evidence_by_session(q) if len(said) == 1]
        if len(sessions) < 2:
            continue
        (older,), (newer,) = sessions[:2]
        source = "longmemeval-multi"
        pairs.append(
            Pair(
                f"{source}:{q['question_id']}",
                source,
                LME_LICENCE,
                split_of(source, q["question_id"]),
                "distinct",
                older,
                newer,
                q["question"],
                "both",
            )
        )
    return pairs


# --- LoCoMo -----------------------------------------------------------------------------------

LOCOMO_LICENCE = "CC BY-NC 4.0 (LoCoMo, Maharana et al. 2024; evaluation only)"
_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")
_WORD = re.compile(r"[a-z0-9']+")


def _locomo_turns(conversation: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """dia_id -> (speaker, text as the recipe writes it)."""
    turns = {}
    for key, session in conversation.items():
        if not re.fullmatch(r"session_\d+", key):
            continue
        for turn in session:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares image: {turn['blip_caption']}]"
            turns[turn["dia_id"]] = (turn["speaker"], text)
    return turns


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def locomo_singlehop(data: Path) -> list[Pair] | None:
    path = data / "dev" / "locomo10_dev.json"
    if not path.exists():
        return None
    source = "locomo-singlehop"
    pairs = []
    for sample in json.loads(path.read_text()):
        turns = _locomo_turns(sample["conversation"])
        asked = []  # (question index, question, dia_id)
        for n, qa in enumerate(sample["qa"]):
            if qa["category"] != 4:
                continue
            ids = [
                f"D{m.group(1)}:{m.group(2)}"
                for e in qa["evidence"]
                for part in re.split(r"[;, ]+", e)
                if (m := _EVIDENCE.fullmatch(part))
            ]
            if len(ids) == 1 and ids[0] in turns:
                asked.append((n, qa["question"], ids[0]))
        words = {dia: _words(turns[dia][1]) for _, _, dia in asked}
        candidates = sorted(
            (
                (_jaccard(words[a[2]], words[b[2]]), i, j)
                for i, a in enumerate(asked)
                for j, b in enumerate(asked)
                if i < j and a[2] != b[2] and turns[a[2]][0] == turns[b[2]][0]
            ),
            reverse=True,
        )
        used: set[int] = set()
        for overlap, i, j in candidates:
            if overlap < LOCOMO_MIN_OVERLAP:
                break
            if i in used or j in used:
                continue
            used |= {i, j}
            (n_a, q_a, d_a), (n_b, q_b, d_b) = asked[i], asked[j]
            item = f"{sample['sample_id']}:q{n_a}:q{n_b}"
            pairs.append(
                Pair(
                    f"{source}:{item}",
                    source,
                    LOCOMO_LICENCE,
                    split_of(source, item),
                    "distinct",
                    turns[d_a][1],
                    turns[d_b][1],
                    q_a,
                    "both",
                    q_b,
                )
            )
    return pairs


# --- memtrust ---------------------------------------------------------------------------------


def memtrust(data: Path) -> list[Pair] | None:
    path = data / "correction" / "memtrust" / "contradiction_cases.json"
    if not path.exists():
        return None
    source = "memtrust"
    return [
        Pair(
            f"{source}:{case['case_id']}",
            source,
            "Apache-2.0 (memtrust-cli 0.3.8; synthetic cases)",
            split_of(source, case["case_id"]),
            "correction",
            case["initial_fact"],
            case["contradicting_fact"],
            case["query"],
            "newer",
        )
        for case in json.loads(path.read_text())["cases"]
    ]


# --- all of them ------------------------------------------------------------------------------

SOURCES: dict[str, Callable[[Path], list[Pair] | None]] = {
    "longmemeval-ku": longmemeval_ku,
    "longmemeval-multi": longmemeval_multi,
    "locomo-singlehop": locomo_singlehop,
    "memtrust": memtrust,
}


def build(data: Path) -> tuple[list[Pair], list[str]]:
    """Every pair of every source found, and the sources that were not."""
    pairs: list[Pair] = []
    missing = []
    for name, make in SOURCES.items():
        made = make(data)
        if made is None:
            missing.append(name)
        else:
            pairs += made
    ids = Counter(p.id for p in pairs)
    if doubles := [i for i, n in ids.items() if n > 1]:
        raise ValueError(f"pair ids made twice: {doubles[:5]}")
    return pairs, missing


def counts(pairs: list[Pair]) -> dict[str, dict[str, int]]:
    """source -> "<kind> <split>" -> pairs."""
    out: dict[str, dict[str, int]] = {}
    for p in pairs:
        row = out.setdefault(p.source, {f"{k} {s}": 0 for k in KINDS for s in SPLITS})
        row[f"{p.kind} {p.split}"] += 1
    return out


def render(table: dict[str, dict[str, int]], missing: list[str], out: Path) -> Iterator[str]:
    columns = [f"{k} {s}" for k in KINDS for s in SPLITS]
    yield f"{'source':<20}" + "".join(f"{c:>17}" for c in columns)
    for source, row in table.items():
        yield f"{source:<20}" + "".join(f"{row[c]:>17}" for c in columns)
    yield f"{'all':<20}" + "".join(f"{sum(r[c] for r in table.values()):>17}" for c in columns)
    for name in missing:
        yield f"{name}: its data was not found, skipped"
    yield f"written to {out}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the bench-data folder")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the JSON file written")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args(argv)
    pairs, missing = build(args.data)
    args.out.write_text(json.dumps([asdict(p) for p in pairs], indent=1, ensure_ascii=False))
    table = counts(pairs)
    if args.json:
        print(json.dumps({"counts": table, "missing": missing, "out": str(args.out)}, indent=2))
    else:
        print("\n".join(render(table, missing, args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
