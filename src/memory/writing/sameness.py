"""Whether a new text is the same fact as an older one with a new value: the judgement the
write decision acts on, with the evidence its events record.

Similarity is necessary, not sufficient: two facts about different things often share a
template ("The alpha service listens on port 5432" / "The beta service listens on port
5432"). So the two texts are aligned word by word and the judgement looks at what differs:

- another identifier, or a number that names a thing (port 8080, room 101, version 3), in
  place of the old one: another thing (``distinct``);
- a change before anything the two texts share that could be their subject ("Alice likes
  tea" / "Bob likes tea"): another subject (``distinct``);
- one changed stretch after a shared subject ("John prefers dark mode" / "... light mode"),
  words only added ("I have a dog" / "... a dog named Rex, a beagle"), a negation, or the same
  words: the same fact with a new value (``same``: supersede);
- anything else close enough: it may be an update, it may not (``possible``: both are kept,
  linked, and recall ranks the newer first).

A wrong ``same`` hides a fact; a wrong ``possible`` only marks one as possibly outdated. So
``same`` is kept for what the alignment shows plainly. Pure: a function of the two texts and
their cosine similarity.

The words it reads and their alignment are in ``sameness_words``, the checks for another
thing in ``sameness_things``, those for a new value in ``sameness_values``.
"""

from __future__ import annotations

import re
from typing import Literal

import msgspec

from .calibration import thresholds_for
from .sameness_things import (
    anchored,
    identity_replaced,
    in_subject,
    named_before_the_rest,
    opening_name_dropped,
    possessed_instead,
    subject_head_changed,
    subject_name_replaced,
    subject_of,
)
from .sameness_values import (
    all_quantities,
    attribute_changed,
    attribute_renamed,
    single_valued_before,
    values_only_changed,
)
from .sameness_words import (
    ADDITIVE_WORDS,
    ATTRIBUTE_OF_CHANGE,
    BINDING_WORDS,
    FUNCTION_WORDS,
    NEGATIONS,
    Prepared,
    opcodes,
    over_determiners,
    prepared,
    stems_of,
)

Verdict = Literal["same", "possible", "distinct"]


class Gates(msgspec.Struct, frozen=True, kw_only=True):
    """The cosine similarities a pair must reach, for one embedder (its cosines run higher or
    lower with the model, so each has its own)."""

    same: float  # to be judged the same fact; a marked change of it, to be linked
    possible: float  # to be linked as a possible update
    # To be linked when the newer text says it is a change ("now", "moved", "new"): the
    # cosine that keeps unrelated texts apart is enough, the words carry the rest. None: ``same``.
    marked: float | None = None

    @property
    def lowest(self) -> float:
        """Under this, no pair is judged: it is dissimilar."""
        low = min(self.same, self.possible)
        return low if self.marked is None else min(low, self.marked)


class Judgement(msgspec.Struct, frozen=True, kw_only=True):
    verdict: Verdict
    similarity: float
    shared_words: float  # Jaccard of the two texts' distinct words (case folded)
    removed: list[str]  # words of the old text in the stretches the new one changed
    added: list[str]  # words of the new text in those stretches
    reason: str  # a stable code saying which rule decided


# Separate changed stretches past this are another instance of a shared template.
MAX_CHANGED_STRETCHES = 1
# The share of the older text's content words the newer must restate to be taken for its
# correction or update at all (supersede or link).
MIN_RESTATED = 0.5


def gates_for(embedder_name: str, supersede_threshold: float | None = None) -> Gates:
    """The gates of an embedder, by its identity's name, as derived for it
    (``calibration.py``); ``supersede_threshold``, when set, replaces its supersede gate.

    At the shipped gates both MiniLM tiers kept 95% of the corrections the rules find (at 0.7
    about 80%), and one distinct pair in ten was linked (at 0.6 three in ten).
    """
    derived = thresholds_for(embedder_name)
    gates = Gates(same=derived.same, possible=derived.possible, marked=derived.floor)
    if supersede_threshold is not None:
        gates = msgspec.structs.replace(gates, same=supersede_threshold)
    return gates


def judge(old: str, new: str, similarity: float, gates: Gates) -> Judgement:
    old_text, new_text = prepared(old), prepared(new)
    union = len(old_text.folded | new_text.folded)
    shared = len(old_text.folded & new_text.folded) / union if union else 1.0
    a_words, b_words, marked = old_text.words, new_text.words, new_text.marked
    a, b = old_text.lower, new_text.lower
    old_content = old_text.content
    # How much of the older text's content the newer one restates: an update of a fact speaks
    # of what the fact spoke of (two remarks of one speaker share "I" and often "now", not
    # their content).
    kept = len(old_content & new_text.content)
    restated = kept / len(old_content) if old_content else 1.0
    # The same words but for amounts, dates and times, in any order ("The sync is in room 420
    # at 11 am" / "The sync changed to room 215 at 1 pm"): a new value of the same thing.
    values_only = values_only_changed(old_text, new_text) or (
        marked and attribute_renamed(old_text, new_text)
    )
    attribute = attribute_changed(old_text, new_text)
    # Whether the newer text may keep every word of the older (then it may be certain); and
    # whether it may be an update. Neither: nothing to align (most close pairs of a store).
    may_keep = _may_keep(old_text, new_text, similarity, gates)
    may_update = restated >= MIN_RESTATED or attribute or values_only
    if similarity < gates.lowest or not (may_keep or may_update):
        return Judgement(
            verdict="distinct",
            similarity=similarity,
            shared_words=shared,
            removed=sorted(old_content - new_text.content),
            added=sorted(new_text.content - old_content),
            reason="dissimilar" if similarity < gates.lowest else "other_content",
        )
    if not values_only and opening_name_dropped(old_text, new_text):
        # A word of the phrase the older text opens with, gone from the newer: another thing
        # of a shared template ("Alice Moreau ..." / "Alice Kowalski ..."), found without
        # aligning the two texts (most close pairs of a store of many facts).
        return Judgement(
            verdict="distinct",
            similarity=similarity,
            shared_words=shared,
            removed=sorted(old_content - new_text.content),
            added=sorted(new_text.content - old_content),
            reason="other_subject",
        )
    regions = over_determiners([op for op in opcodes(a, b) if op[0] != "equal"], a)
    removed = [w for _, i1, i2, _, _ in regions for w in a_words[i1:i2]]
    added = [w for _, _, _, j1, j2 in regions for w in b_words[j1:j2]]

    def verdict(kind: Verdict, reason: str) -> Judgement:
        return Judgement(
            verdict=kind,
            similarity=similarity,
            shared_words=shared,
            removed=removed,
            added=added,
            reason=reason,
        )

    # Certain: the newer text keeps every word the older one said (only a word saying when,
    # a negation or detail after its end added). Only then is the older hidden.
    if may_keep:
        certain = _certain(old_text, new_text)
        if certain is not None:
            return verdict("same", certain)
    # A link hides nothing, so its gates are generous, the more so the plainer the words say
    # it: a text that says it is a change, or whose change word names the very attribute the
    # older states (moved / lives), needs only the gate that keeps unrelated texts apart; a
    # new value of a predicate holding one value at a time, or new amounts and dates of the
    # same words, the supersede gate; any other changed value, the link gate.
    said = gates.same if gates.marked is None else gates.marked

    def linked(reason: str, gate: float) -> Judgement:
        return verdict("possible", reason) if similarity >= gate else verdict("distinct", "close")

    if not regions:  # the same words once the change words are left out: an update
        return linked("marked_change", said if marked else gates.possible)
    # Another thing: never linked, whatever the words say of a change.
    first = regions[0]
    replaced = identity_replaced(regions, a_words, b_words)
    if replaced is not None and (in_subject(a_words, replaced[1]) or not (marked or values_only)):
        return verdict("distinct", "other_identifier")
    if values_only:
        return linked("new_quantity", said if marked else gates.same)
    if (
        subject_of(a) != subject_of(b)
        or (first[0] == "replace" and not anchored(a[: first[1]]))
        or subject_head_changed(a, first)
        or subject_name_replaced(a_words, b_words, first)
        or possessed_instead(a_words, b, first)
    ):
        return verdict("distinct", "other_subject")
    # A new value changes one stretch of the fact; separate stretches of one template filled
    # otherwise ("The delivery from Zitend Supplies arrives on Sunday" / "... from Krafuflon
    # Supplies arrives on Wednesday") are another instance of the template. A stretch where
    # a text saying it is a change only rephrases its verb ("listens on" / "moved to") is
    # part of saying so.
    changed = [op for op in regions if not (marked and _rephrased(op, b))]
    if len(changed) > MAX_CHANGED_STRETCHES and not all_quantities(regions, a_words, b_words):
        return verdict("distinct", "several_changes")
    # English states what a clause is about first and its new information last: one name
    # changed with more of the fact after it ("The bus from Faitratoth Square goes to the
    # stadium every 20 minutes" / "... from Rokru Square ...") names another thing. Unless a
    # predicate that holds one value at a time comes before it ("Tom prefers window seats on
    # flights" / "... aisle seats on flights").
    single_valued = len(changed) == 1 and single_valued_before(a, changed[0])
    if (
        len(changed) == 1
        and named_before_the_rest(a_words, changed[0])
        and not (attribute or single_valued)
    ):
        return verdict("distinct", "other_name")
    # Maybe an update: kept beside the older text, linked, ranked first.
    if not (restated >= MIN_RESTATED or attribute):
        return verdict("distinct", "other_content")
    if replaced is not None:  # in the predicate, of a text that says it is a change
        return linked("other_identifier", said)
    if any(w.lower() in ADDITIVE_WORDS for w in new_text.all_words):
        return linked("additive", gates.possible)
    if marked or attribute:
        return linked("marked_change", said)
    if single_valued and first[0] == "replace":
        return linked("new_value", gates.same)
    return linked("other_value", gates.possible)


def _rephrased(region: tuple[str, int, int, int, int], b: list[str]) -> bool:
    """Whether a changed stretch holds no content word on the newer side."""
    _, _, _, j1, j2 = region
    return all(w in FUNCTION_WORDS for w in b[j1:j2])


def lowest_judged(new: str, gates: Gates) -> float:
    """The cosine under which ``judge`` finds any older text ``distinct`` from ``new``, read
    from ``new`` alone, so that a write need not read the words of the many close memories
    under it (a cache miss each, in a big container).

    Under both the supersede and the link gate, ``judge`` has one way to ``possible``: the
    gate of a text that says it is a change (``marked``) or whose change word names an
    attribute (``attribute_changed`` needs one in the newer text); ``same`` needs the
    supersede gate. So for any other newer text, that gate is the lowest."""
    words = prepared(new)
    if words.marked or any(w in ATTRIBUTE_OF_CHANGE for w in words.plain):
        return gates.lowest
    return max(gates.lowest, min(gates.same, gates.possible))


def may_keep(old: str, new: str, similarity: float, gates: Gates) -> bool:
    """Whether ``new`` may keep every word of ``old`` (only then can it supersede it): a
    test of their word sets, without aligning them."""
    # The cosine first: most close pairs of a store fall under the supersede gate, and it
    # spares reading the words of each (a cache miss in a big container).
    return similarity >= gates.same and prepared(old).stems <= prepared(new).stems


def _may_keep(old: Prepared, new: Prepared, similarity: float, gates: Gates) -> bool:
    return similarity >= gates.same and old.stems <= new.stems


def _certain(old: Prepared, new: Prepared) -> str | None:
    """Why the newer text surely loses nothing the older one said, or None: the same words
    (a word saying *now* or *actually* aside), a negation added or dropped and nothing else,
    or words appended after the older text's last one."""
    a, b = old.plain, new.plain
    regions = [op for op in opcodes(a, b) if op[0] != "equal"]
    if not regions:
        return "restated"
    if _negated(a, b, regions):
        return "negation"
    if len(regions) == 1 and _appended(a, b, regions[0], new.raw):
        return "more_detail"
    return None


def _negated(a: list[str], b: list[str], regions: list[tuple[str, int, int, int, int]]) -> bool:
    """The change adds or drops a negation and nothing else: the same content words, but for
    an inflection ("likes" / "does not like")."""
    changed = [w for _, i1, i2, j1, j2 in regions for w in a[i1:i2] + b[j1:j2]]
    if not any(w in NEGATIONS for w in changed):
        return False
    return stems_of(a) == stems_of(b)


def _appended(a: list[str], b: list[str], region: tuple[str, int, int, int, int], raw: str) -> bool:
    """Words added after the older text's last word, not bound to it: detail on what it said
    ("I have a dog" / "... a dog named Rex"), not another thing named after it ("atlas" /
    "atlas-web", "the Go team" / "the Go team's lead")."""
    tag, i1, _, j1, _ = region
    if tag != "insert" or i1 != len(a) or not a or b[j1] in BINDING_WORDS:
        return False
    joined = re.compile(re.escape(a[-1]) + r"[-_/.'\u2019@]\w", re.IGNORECASE)
    return joined.search(raw) is None
