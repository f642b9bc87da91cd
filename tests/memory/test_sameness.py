"""The judgement of the write decision: each rule on the pair it is for, and, on the labelled
corpus with the real embedders, no distinct fact ever judged the same as another."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import cydifflib
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemolog.embedding import open_embedder
from mnemolog.memory.writing.calibration import SHIPPED
from mnemolog.memory.writing.sameness import Gates, gates_for, judge, lowest_judged
from mnemolog.memory.writing.sameness_words import (
    ATTRIBUTE_OF_CHANGE,
    FUNCTION_WORDS,
    NEGATIONS,
    WHEN_WORDS,
    words,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "write_pairs"
OPEN = Gates(same=0.0, possible=0.0)  # the rules alone, whatever the similarity


@pytest.mark.parametrize(
    ("old", "new", "verdict", "reason"),
    [
        ("John prefers dark mode", "John prefers  dark mode.", "same", "restated"),
        ("John prefers dark mode", "John prefers light mode", "possible", "new_value"),
        ("I live in Berlin", "I live in Munich now", "possible", "marked_change"),
        ("I have 3 cats.", "I have 4 cats.", "possible", "new_quantity"),
        ("I have a dog", "I have a dog named Rex, a beagle", "same", "more_detail"),
        ("I like coffee", "I don't like coffee", "same", "negation"),
        ("Alice likes tea", "Alice doesn't like tea", "same", "negation"),
        (
            "Alice now lives in Porto",
            "Alice lives in Porto with her partner",
            "same",
            "more_detail",
        ),
        # Another thing named after the older one's last word, or something of its subject.
        ("Deploy atlas", "Deploy atlas-web", "possible", "other_value"),
        ("Alice is vegan", "Alice's mum isn't vegan", "distinct", "other_subject"),
        (
            "Alice is on the Go team",
            "Alice is on the Go team's waitlist",
            "possible",
            "other_value",
        ),
        # Change words about another thing are no evidence of identity.
        (
            "Alice Moreau moved to Lisbon and now works on the Rust team.",
            "Alice Kowalski moved to Oslo and now works on the Go team.",
            "distinct",
            "other_subject",
        ),
        (
            "Pin requests to 2.31 in atlas because the license changed upstream.",
            "Pin httpx to 0.27 in borealis because the license changed upstream.",
            "distinct",
            "several_changes",
        ),
        (
            "Invoice 4471 for Acme changed status to paid.",
            "Invoice 5312 for Globex changed status to overdue.",
            "distinct",
            "other_content",
        ),
        (
            "Marta switched to night shifts at the Leeds plant.",
            "Jonas switched to early shifts at the Porto plant.",
            "distinct",
            "other_content",
        ),
        # A number in the opening noun phrase names the thing; after it, it is a value.
        (
            "The 9:40 train leaves from platform 3",
            "The 8:15 train leaves from platform 5",
            "distinct",
            "other_identifier",
        ),
        # One name changed with the rest of the fact after it: another thing of a template.
        (
            "The bus from Faitratoth Square goes to the stadium every 20 minutes.",
            "The bus from Rokru Square goes to the stadium every 20 minutes.",
            "distinct",
            "other_subject",
        ),
        (
            "I lent my copy of Fagex and the Sea to Grace in April.",
            "I lent my copy of Storol and the Sea to Grace in April.",
            "distinct",
            "other_name",
        ),
        (
            "Tom prefers window seats on flights.",
            "Tom prefers aisle seats on flights.",
            "possible",
            "new_value",
        ),
        (
            "My goldfish Hikral sees the vet every January.",
            "My goldfish Stazo sees the vet every January.",
            "distinct",
            "other_subject",
        ),
        # The same words but for values, in any order: a new value of the same thing.
        (
            "The weekly sync is in room 420 at 11:45 am.",
            "The weekly sync changed to room 215 at 1 pm.",
            "possible",
            "new_quantity",
        ),
        (
            "Omar is on the onboarding team.",
            "Omar switched to the billing team.",
            "possible",
            "marked_change",
        ),
        # The attribute worded as a noun in the correction, as a verb in the older text.
        (
            "The hesibras report is due on July 20.",
            "The deadline for the hesibras report moved to October 23.",
            "possible",
            "new_quantity",
        ),
        (
            "The Drostu gym membership costs 79 euros a month.",
            "The price of the Drostu gym membership changed to 12 euros a month.",
            "possible",
            "new_quantity",
        ),
        # ... but not when the thing is named otherwise.
        (
            "My membership number at the Zogen pool ends in 1732.",
            "My new membership number at the Kifa pool ends in 7145.",
            "distinct",
            "several_changes",
        ),
        (
            "The Drostu gym membership costs 79 euros a month.",
            "The price of the Vexa gym membership changed to 12 euros a month.",
            "distinct",
            "other_subject",
        ),
        # Corrections as people write them: linked, never hidden.
        (
            "My locker code ends in 4417.",
            "My new locker code ends in 9082.",
            "possible",
            "new_quantity",
        ),
        ("Priya is 33 years old.", "Priya turned 34 last week.", "possible", "new_quantity"),
        (
            "The dentist appointment is on Tuesday at 3pm.",
            "The dentist appointment moved to Friday at 10am.",
            "possible",
            "new_quantity",
        ),
        ("Ravi works as a nurse.", "Ravi now works in finance.", "possible", "marked_change"),
        (
            "Alice now lives in Porto.",
            "Actually Alice moved to Berlin last month.",
            "possible",
            "marked_change",
        ),
        (
            "The alpha service listens on port 5432.",
            "The beta service listens on port 5432.",
            "distinct",
            "other_subject",
        ),
        (
            "Room 101 is the server room",
            "Room 102 is the server room",
            "distinct",
            "other_identifier",
        ),
        (
            "The payments service listens on port 8080",
            "The payments service listens on port 9090",
            "possible",
            "new_quantity",
        ),
        (
            "Kafka broker 1 listens on 9092.",
            "Kafka broker 2 listens on 9093.",
            "distinct",
            "other_identifier",
        ),
        ("Gina: Thanks, Jon!", "Jon: Thanks, Gina!", "distinct", "other_subject"),
        (
            "Meeting room Velaro is on floor 3.",
            "Meeting room Quintos is on floor 3.",
            "distinct",
            "other_subject",
        ),
        (
            "The Velaro lab is on floor 3.",
            "The Quintos lab is on floor 3.",
            "distinct",
            "other_subject",
        ),
        (
            "Velaro builds ship on Mondays.",
            "Quintos builds ship on Mondays.",
            "distinct",
            "other_subject",
        ),
        (
            "Maria's dog is called Rex.",
            "Maria's dog is called Max.",
            "distinct",
            "other_identifier",
        ),
        # Conversation: a number of an item is no amount, "for a month now" is no change.
        ("More detail on 1.", "More detail on 5.", "possible", "new_quantity"),
        (
            "I've done yoga twice a week for a month now and I sleep better.",
            "I've done yoga twice a week for a month now and I sleep worse.",
            "possible",
            "other_value",
        ),
        ("Tom speaks Spanish.", "Tom speaks Japanese.", "possible", "other_value"),
        ("My sister lives in Paris", "My sister works in Paris", "possible", "other_value"),
        ("Tom speaks Spanish.", "Tom speaks Japanese too.", "possible", "additive"),
        ("Sofia once lived in Toronto.", "Sofia once lived in Sydney.", "possible", "other_value"),
        (
            "Alice's favourite colour is blue",
            "Alice's favourite food is pizza",
            "distinct",
            "several_changes",
        ),
    ],
)
def test_each_rule_on_the_pair_it_is_for(old: str, new: str, verdict: str, reason: str) -> None:
    judgement = judge(old, new, 0.9, OPEN)
    assert (judgement.verdict, judgement.reason) == (verdict, reason)


_TEXT = (
    "Alice Bob Priya the a my her team Go Rust Porto Berlin lives works in at on is was not"
    " now new moved changed prefers tea coffee 3 4 pm cats dog named Rex and with 's of"
)
_VOCABULARY = tuple(_TEXT.split())


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(_VOCABULARY), min_size=1, max_size=8),
    st.lists(st.sampled_from(_VOCABULARY), min_size=1, max_size=10),
)
def test_only_a_text_that_keeps_every_word_of_the_older_hides_it(
    old: list[str], new: list[str]
) -> None:
    """Whatever the texts, a supersede (``same``) keeps every content word of the older text
    (but for a word that only says when, "now"): nothing it said is lost."""
    judgement = judge(" ".join(old), " ".join(new), 1.0, OPEN)
    if judgement.verdict == "same":
        kept = {w.lower() for w in words(" ".join(new))}
        said = {w.lower() for w in words(" ".join(old))} - FUNCTION_WORDS - NEGATIONS - WHEN_WORDS
        assert {w.rstrip("s") for w in said} <= {w.rstrip("s") for w in kept}


def test_an_attribute_change_links_at_the_gate_of_marked_changes() -> None:
    """A change word naming the attribute the older text states links at the gate of marked
    changes, however few words the two texts share; a change of another attribute does not."""
    gates = Gates(same=0.5, possible=0.75, marked=0.3)
    moved = ("Alice now lives in Porto.", "Actually Alice moved to Berlin last month.")
    assert judge(*moved, 0.42, gates).verdict == "possible"
    assert judge(*moved, 0.29, gates).verdict == "distinct"
    other = ("Alice is allergic to peanuts.", "Alice now plays tennis on Sundays.")
    assert judge(*other, 0.9, gates).verdict == "distinct"


SHIPPED_GATES = [
    Gates(same=t.same, possible=t.possible, marked=t.floor) for t in SHIPPED.values()
] + [Gates(same=0.8, possible=0.6, marked=None)]
_CHANGING = (*_VOCABULARY, *sorted(ATTRIBUTE_OF_CHANGE)[:12], "actually", "switched", "turned")


@settings(max_examples=600, deadline=None)
@given(
    st.lists(st.sampled_from(_CHANGING), min_size=1, max_size=8),
    st.lists(st.sampled_from(_CHANGING), min_size=1, max_size=10),
    st.sampled_from(SHIPPED_GATES),
    st.floats(min_value=0.0, max_value=1.0),
)
def test_under_its_lowest_judged_cosine_a_write_is_distinct_from_any_text(
    old: list[str], new: list[str], gates: Gates, share: float
) -> None:
    """``lowest_judged`` reads the newer text alone; under it, ``judge`` never links nor
    supersedes, so the write decision may leave those candidates unread."""
    older, newer = " ".join(old), " ".join(new)
    lowest = lowest_judged(newer, gates)
    similarity = gates.lowest + share * (lowest - gates.lowest)
    if similarity < lowest:
        assert judge(older, newer, similarity, gates).verdict == "distinct"


def test_the_lowest_judged_cosine_holds_on_the_labelled_pairs() -> None:
    """On every labelled pair, both ways, at every shipped gate: just under the cosine
    ``lowest_judged`` gives, the pair is distinct; a pair a change word links stays judged."""
    pairs = [
        json.loads(line)
        for split in ("dev", "holdout")
        for line in (DATA / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    raised = 0
    for pair in pairs:
        for older, newer in ((pair["old"], pair["new"]), (pair["new"], pair["old"])):
            for gates in SHIPPED_GATES:
                lowest = lowest_judged(newer, gates)
                raised += lowest > gates.lowest
                for under in (gates.lowest, (gates.lowest + lowest) / 2, lowest - 1e-9):
                    if under < lowest:
                        assert judge(older, newer, under, gates).verdict == "distinct"
    assert raised > 0
    moved = ("Alice now lives in Porto.", "Actually Alice moved to Berlin last month.")
    gates = Gates(same=0.5, possible=0.75, marked=0.3)
    assert lowest_judged(moved[1], gates) == 0.3 and judge(*moved, 0.42, gates).verdict == (
        "possible"
    )


def test_the_evidence_names_the_words_that_differ() -> None:
    judgement = judge("John prefers dark mode", "John prefers light mode", 0.93, OPEN)
    assert (judgement.removed, judgement.added) == (["dark"], ["light"])
    assert judgement.similarity == 0.93 and judgement.shared_words == pytest.approx(3 / 5)


def test_the_gates_keep_dissimilar_texts_apart() -> None:
    gates = Gates(same=0.5, possible=0.75)
    assert judge("John prefers dark mode", "John prefers light mode", 0.49, gates).verdict == (
        "distinct"
    )
    unsure = ("Tom speaks Spanish.", "Tom speaks Japanese.")
    assert judge(*unsure, 0.8, gates).verdict == "possible"
    assert judge(*unsure, 0.7, gates).verdict == "distinct"
    # Two remarks of one speaker share "I" and maybe "now", not their content: never taken
    # for an update of each other, however close their vectors.
    remarks = ("I love hiking in the Alps.", "I now work at Google as a designer.")
    assert judge(*remarks, 0.9, gates).verdict == "distinct"


def test_words_split_possessives_contractions_and_plain_hyphenation() -> None:
    assert words("Nadia's rate-limited api-v2 doesn't") == [
        "Nadia",
        "'s",
        "rate",
        "limited",
        "api-v2",
        "does",
        "n't",
    ]


def test_only_the_derived_embedders_have_gates() -> None:
    for name in SHIPPED:
        assert 0 < gates_for(name).same <= gates_for(name).possible < 1
        assert gates_for(name, 0.9).same == 0.9
    with pytest.raises(ValueError, match="no thresholds are derived"):
        gates_for("some-other-model")


@pytest.mark.parametrize("tier", ["fast", "quality"])
def test_no_distinct_pair_of_the_corpus_is_judged_the_same(tier: str) -> None:
    """Precision first: on every labelled pair, dev and holdout, a distinct fact is never
    taken for a correction of another (it would be hidden)."""
    pairs = [
        json.loads(line)
        for split in ("dev", "holdout")
        for line in (DATA / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    embedder = open_embedder(tier, Path.home() / ".cache" / "mnemolog" / "models")
    gates = gates_for(embedder.identity.name)
    old = embedder.embed([p["old"] for p in pairs])
    new = embedder.embed([p["new"] for p in pairs])
    hidden = [
        (p["id"], judgement.reason)
        for p, a, b in zip(pairs, old, new, strict=True)
        if p["label"] == "distinct"
        and (judgement := judge(p["old"], p["new"], float(a @ b), gates)).verdict == "same"
    ]
    assert hidden == []
    duplicates = [p for p in pairs if p["label"] == "duplicate"]
    assert all(judge(p["old"], p["new"], 1.0, gates).verdict == "same" for p in duplicates)


_VOCAB = st.sampled_from(
    [
        "the",
        "a",
        "cat",
        "dog",
        "moved",
        "to",
        "paris",
        "now",
        "lives",
        "in",
        "berlin",
        "not",
        "42",
        "x",
    ]
)


@settings(max_examples=400, deadline=None)
@given(a=st.lists(_VOCAB, max_size=14), b=st.lists(_VOCAB, max_size=14))
def test_the_alignment_is_difflibs(a: list[str], b: list[str]) -> None:
    """The compiled alignment the judgement reads gives difflib's own opcodes: a release of it
    that aligned otherwise would change verdicts without a word of the rules changing."""
    expected = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    found = cydifflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    assert [tuple(op) for op in found] == [tuple(op) for op in expected]
