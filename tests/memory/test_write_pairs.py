"""The labelled pairs of ``tests/data/write_pairs/`` are well formed: the corpus that the write
decision (``mnemolog.memory.writing.sameness.judge``) is designed on (``dev``) and checked on
(``holdout``), and that ``bench/write_rule.py`` scores.

Only the corpus's shape is checked here, never a rule's figures on it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "write_pairs"
SPLITS = ("dev", "holdout")
FIELDS = {"id", "category", "label", "old", "new"}
LABEL_OF = {
    **dict.fromkeys(
        (
            "preference",
            "place",
            "job",
            "number",
            "date",
            "negation",
            "more_detail",
            "paraphrase",
            "explicit_marker",
        ),
        "correction",
    ),
    **dict.fromkeys(
        (
            "same_template_other_subject",
            "same_subject_other_attribute",
            "two_speakers",
            "list_items",
        ),
        "distinct",
    ),
    "duplicate": "duplicate",
}
# The fewest pairs a category may have in each split (duplicates need fewer), and in all.
MIN_PER_CATEGORY = {"dev": 30, "holdout": 10}
MIN_DUPLICATES = {"dev": 20, "holdout": 6}
MIN_TOTAL = {"dev": 420, "holdout": 140}
_SPEAKER = re.compile(r"([A-Z][\w'-]*): \S")


def load(split: str) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate((DATA / f"{split}.jsonl").read_text("utf-8").splitlines(), 1):
        assert line.strip(), f"{split}.jsonl line {number} is blank"
        row = json.loads(line)
        assert isinstance(row, dict), f"{split}.jsonl line {number} is not an object"
        rows.append(row)
    return rows


def trivial_form(text: str) -> str:
    """A text with what a duplicate may change left out: case, whitespace, punctuation."""
    return " ".join(re.findall(r"\w+", text.casefold()))


@pytest.fixture(scope="module")
def corpus() -> dict[str, list[dict[str, Any]]]:
    return {split: load(split) for split in SPLITS}


@pytest.mark.parametrize("split", SPLITS)
def test_every_pair_has_the_fields_a_known_category_and_its_label(
    corpus: dict[str, list[dict[str, Any]]], split: str
) -> None:
    for row in corpus[split]:
        assert set(row) == FIELDS, row
        assert all(isinstance(row[f], str) and row[f].strip() for f in FIELDS), row
        assert row["category"] in LABEL_OF, row
        assert row["label"] == LABEL_OF[row["category"]], row
        assert re.fullmatch(re.escape(row["category"]) + r"-[1-9]\d*", row["id"]), row


def test_ids_are_unique_across_both_splits(corpus: dict[str, list[dict[str, Any]]]) -> None:
    ids = Counter(row["id"] for split in SPLITS for row in corpus[split])
    assert [i for i, n in ids.items() if n > 1] == []


@pytest.mark.parametrize("split", SPLITS)
def test_a_duplicate_differs_only_trivially_and_any_other_pair_in_words(
    corpus: dict[str, list[dict[str, Any]]], split: str
) -> None:
    for row in corpus[split]:
        old, new = row["old"], row["new"]
        assert old != new, row
        if row["label"] == "duplicate":
            assert trivial_form(old) == trivial_form(new), row
        else:
            assert trivial_form(old) != trivial_form(new), row
            assert old == old.strip() and new == new.strip(), row


@pytest.mark.parametrize("split", SPLITS)
def test_no_pair_is_repeated_within_a_split(
    corpus: dict[str, list[dict[str, Any]]], split: str
) -> None:
    pairs = Counter(
        frozenset((trivial_form(row["old"]), trivial_form(row["new"]))) for row in corpus[split]
    )
    assert [sorted(p) for p, n in pairs.items() if n > 1] == []


def test_the_splits_share_no_pair_and_no_text(corpus: dict[str, list[dict[str, Any]]]) -> None:
    def texts(split: str) -> set[str]:
        return {trivial_form(row[f]) for row in corpus[split] for f in ("old", "new")}

    assert sorted(texts("dev") & texts("holdout")) == []


@pytest.mark.parametrize("split", SPLITS)
def test_two_speakers_are_two_named_people(
    corpus: dict[str, list[dict[str, Any]]], split: str
) -> None:
    for row in corpus[split]:
        if row["category"] != "two_speakers":
            continue
        old, new = _SPEAKER.match(row["old"]), _SPEAKER.match(row["new"])
        assert old is not None and new is not None, row
        assert old[1] != new[1], row


@pytest.mark.parametrize("split", SPLITS)
def test_every_category_has_its_minimum_of_pairs(
    corpus: dict[str, list[dict[str, Any]]], split: str
) -> None:
    counts = Counter(row["category"] for row in corpus[split])
    for category in LABEL_OF:
        least = MIN_DUPLICATES[split] if category == "duplicate" else MIN_PER_CATEGORY[split]
        assert counts[category] >= least, (category, counts[category])
    assert len(corpus[split]) >= MIN_TOTAL[split]


def test_the_holdout_is_about_a_third_of_dev(corpus: dict[str, list[dict[str, Any]]]) -> None:
    assert 0.25 <= len(corpus["holdout"]) / len(corpus["dev"]) <= 0.45
