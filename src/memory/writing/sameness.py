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
"""

from __future__ import annotations

import difflib
import functools
import re
from typing import Literal, NamedTuple

import msgspec

from .calibration import thresholds_for

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


# Closed-class words: they carry no subject of their own.
FUNCTION_WORDS = frozenset(
    """a an the this that these those my our your his her its their
    of in on at to for from with by about as into onto over under near
    and or but so than then
    is are was were be been being am has have had do does did will would shall should
    can could may might must 's 're 've 'd 'll there""".split()  # noqa: SIM905
)
# The function words that come right after a sentence's subject.
AUXILIARIES = frozenset(
    "is are was were am has have had will would can could does did 's".split()  # noqa: SIM905
)
# Pronouns that are a sentence's subject by themselves.
SUBJECT_PRONOUNS = frozenset("i we he she they you it".split())  # noqa: SIM905
NEGATIONS = frozenset("not no never n't".split())  # noqa: SIM905
# A number right after one of these names the thing ("port 8080", "room 101"), it is not a
# value of it.
IDENTITY_NOUNS = frozenset(
    """port room version v release build ticket issue order pr id no number flat apartment
    unit suite floor gate line route bus platform table seat bay rack node host server
    vlan pid uid account broker worker replica shard instance pod cluster region zone disk
    drive volume partition queue topic channel terminal lane track stage phase step level
    chapter section page episode lot locker desk cabin ward block building team group
    class case invoice booking reservation flight claim policy contract shipment parcel
    package batch sku serial plate called named""".split()  # noqa: SIM905
)
# Words by which a text says it replaces what was true before. Left out of the alignment
# (they are not the fact), and the evidence that a changed value is a correction.
CHANGE_WORDS = frozenset(
    """now anymore instead correction update updated moved switched changed lately nowadays
    relocated rescheduled postponed renamed replaced became quit stopped dropped retired
    retrained promoted migrated new turned pushed upgraded downgraded transferred
    reassigned""".split()  # noqa: SIM905
)
CHANGE_PHRASES = (("these", "days"), ("any", "more"), ("from", "now", "on"), ("no", "longer"))
# The words among those that only say *when* a text holds: a text that differs from another by
# them alone says the same thing (what it says is certain to be kept).
WHEN_WORDS = frozenset("now anymore instead lately nowadays actually currently".split())  # noqa: SIM905
WHEN_PHRASES = (("these", "days"), ("any", "more"), ("from", "now", "on"))
# The attributes a change verb changes, by the words that state them: English says "moved"
# of where one lives, "turned" of one's age, "rescheduled" of when a thing happens.
_HOME = frozenset("live lives living lived based located home address resides stays".split())  # noqa: SIM905
_WHEN = frozenset("scheduled due on at starts begins ends deadline booked planned".split())  # noqa: SIM905
_AGE = frozenset("old age aged years".split())  # noqa: SIM905
_JOB = frozenset("works work job role title position employed".split())  # noqa: SIM905
ATTRIBUTE_OF_CHANGE: dict[str, frozenset[str]] = {
    "moved": _HOME | _WHEN,
    "relocated": _HOME,
    "turned": _AGE,
    "rescheduled": _WHEN,
    "postponed": _WHEN,
    "pushed": _WHEN,
    "retrained": _JOB,
    "promoted": _JOB,
    "quit": _JOB,
    "retired": _JOB,
}
# Separate changed stretches past this are another instance of a shared template.
MAX_CHANGED_STRETCHES = 1
# A changed stretch followed by this many shared content words names a thing, not a value.
TAIL_OF_A_NAME = 2
# Words that, right after a noun, make it part of another thing's name ("the team's lead").
BINDING_WORDS = frozenset("'s of".split())  # noqa: SIM905
# Prepositions that continue a noun phrase with another ("the invoice from Acme").
PHRASE_PREPOSITIONS = frozenset("of from for".split())  # noqa: SIM905
# Words of a subject's noun phrase that name no thing of their own.
DETERMINERS = frozenset("a an the this that these those my our your his her its their 's".split())  # noqa: SIM905
# Words left out of the alignment that are no evidence of a change: "actually" is mostly a
# hedge in conversation ("I'm actually thinking of ..."), "currently" restates.
TIME_WORDS = frozenset("actually currently".split())  # noqa: SIM905
# "now" after a duration ("for a month now", "for years now") says how long, not what changed.
DURATION_WORDS = frozenset("for since ago".split())  # noqa: SIM905
# The share of the older text's content words the newer must restate to be taken for its
# correction or update at all (supersede or link).
MIN_RESTATED = 0.5
# Words by which a text adds to what was true before: never a replacement.
ADDITIVE_WORDS = frozenset("also too additionally another besides".split())  # noqa: SIM905
# Predicates that hold one value at a time: a new value replaces the old one. (Not "called"
# or "named": a name tells one thing from another, as an identifier does.)
SINGLE_VALUED = frozenset(
    """prefer prefers preferred favourite favorite favourites live lives living based
    located address works work job title role salary earns costs cost price charges rent
    age old due deadline expires starts ends begins scheduled married manager lead leads
    owner owns maintains maintained default status weighs tall height timezone""".split()  # noqa: SIM905
)
CALENDAR_WORDS = frozenset(
    """january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday
    friday saturday sunday mondays tuesdays wednesdays thursdays fridays saturdays sundays
    noon midnight""".split()  # noqa: SIM905
)
# ...unless the text is about the past or a list of experiences.
EXPERIENCE_WORDS = frozenset("once ever visited been used".split())  # noqa: SIM905

_WORD = re.compile(r"\w+(?:['\u2019.\-/:]\w+)*")
_QUANTITY = re.compile(r"\d+(?:[.,:]\d+)?(?:[a-z]{1,3}|%|-[a-z]+)?", re.IGNORECASE)


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


def words(text: str) -> list[str]:
    """The words of a text as written, a possessive or contraction split off its word
    ("Nadia's" -> "Nadia", "'s"; "don't" -> "do", "n't"), and a hyphenated word without a
    digit split in its words (a hyphenated name with one, "atlas-17", is kept whole)."""
    out: list[str] = []
    for word in _WORD.findall(text.replace("\u2019", "'")):
        if "-" not in word and "'" not in word:
            out.append(word)  # the usual word: nothing to split
            continue
        lower = word.lower()
        if "-" in word and not any(c.isdigit() for c in word):
            out += words(word.replace("-", " "))  # "rate-limited" is "rate limited"
        elif lower.endswith("n't") and len(word) > 3:
            out += [word[:-3], word[-3:]]
        elif "'" in word and not lower.startswith("'"):
            stem, _, rest = word.partition("'")
            out += [stem, "'" + rest]
        else:
            out.append(word)
    return out


def judge(old: str, new: str, similarity: float, gates: Gates) -> Judgement:
    old_text, new_text = _prepared(old), _prepared(new)
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
    values_only = _values_only_changed(old_text, new_text) or (
        marked and _attribute_renamed(old_text, new_text)
    )
    attribute = _attribute_changed(old_text, new_text)
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
    if not values_only and _opening_name_dropped(old_text, new_text):
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
    regions = _over_determiners([op for op in _opcodes(a, b) if op[0] != "equal"], a)
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
    replaced = _identity_replaced(regions, a_words, b_words)
    if replaced is not None and (_in_subject(a_words, replaced[1]) or not (marked or values_only)):
        return verdict("distinct", "other_identifier")
    if values_only:
        return linked("new_quantity", said if marked else gates.same)
    if (
        _subject(a) != _subject(b)
        or (first[0] == "replace" and not _anchored(a[: first[1]]))
        or _subject_head_changed(a, first)
        or _subject_name_replaced(a_words, b_words, first)
        or _possessed_instead(a_words, b, first)
    ):
        return verdict("distinct", "other_subject")
    # A new value changes one stretch of the fact; separate stretches of one template filled
    # otherwise ("The delivery from Zitend Supplies arrives on Sunday" / "... from Krafuflon
    # Supplies arrives on Wednesday") are another instance of the template. A stretch where
    # a text saying it is a change only rephrases its verb ("listens on" / "moved to") is
    # part of saying so.
    changed = [op for op in regions if not (marked and _rephrased(op, b))]
    if len(changed) > MAX_CHANGED_STRETCHES and not _all_quantities(regions, a_words, b_words):
        return verdict("distinct", "several_changes")
    # English states what a clause is about first and its new information last: one name
    # changed with more of the fact after it ("The bus from Faitratoth Square goes to the
    # stadium every 20 minutes" / "... from Rokru Square ...") names another thing. Unless a
    # predicate that holds one value at a time comes before it ("Tom prefers window seats on
    # flights" / "... aisle seats on flights").
    single_valued = len(changed) == 1 and _single_valued(a, changed[0])
    if (
        len(changed) == 1
        and _named_before_the_rest(a_words, changed[0])
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


def _over_determiners(
    regions: list[tuple[str, int, int, int, int]], a: list[str]
) -> list[tuple[str, int, int, int, int]]:
    """Changed stretches with only a determiner between them made one ("at the station" / "in
    the shed behind the house": "the" is no shared part of the fact)."""
    merged: list[tuple[str, int, int, int, int]] = []
    for region in regions:
        if merged and all(w in DETERMINERS for w in a[merged[-1][2] : region[1]]):
            _, i1, _, j1, _ = merged[-1]
            merged[-1] = ("replace", i1, region[2], j1, region[4])
        else:
            merged.append(region)
    return merged


def _rephrased(region: tuple[str, int, int, int, int], b: list[str]) -> bool:
    """Whether a changed stretch holds no content word on the newer side."""
    _, _, _, j1, j2 = region
    return all(w in FUNCTION_WORDS for w in b[j1:j2])


def _named_before_the_rest(a: list[str], region: tuple[str, int, int, int, int]) -> bool:
    """Whether a replaced stretch of the older text (as written) is a name followed by a
    shared stretch holding two content words or more: it names what the rest is said of, it
    is not its value. A name: a capitalised word inside the text, or any word of the noun
    phrase the text opens with."""
    tag, i1, i2, _, _ = region
    stretch = a[i1:i2]
    if tag != "replace" or all(
        w.lower() in CALENDAR_WORDS or _QUANTITY.fullmatch(w) for w in stretch
    ):
        return False
    named = _in_subject(a, i1) or any(
        w[:1].isupper() and w.lower() not in FUNCTION_WORDS for w in stretch if i1 > 0
    )
    after = [w for w in a[i2:] if w.lower() not in FUNCTION_WORDS]
    return named and len(after) >= TAIL_OF_A_NAME


def may_keep(old: str, new: str, similarity: float, gates: Gates) -> bool:
    """Whether ``new`` may keep every word of ``old`` (only then can it supersede it): a
    test of their word sets, without aligning them."""
    return _may_keep(_prepared(old), _prepared(new), similarity, gates)


def _may_keep(old: _Prepared, new: _Prepared, similarity: float, gates: Gates) -> bool:
    return similarity >= gates.same and old.stems <= new.stems


def _opening_name_dropped(old: _Prepared, new: _Prepared) -> bool:
    """Whether a name of the older text's opening noun phrase (a capitalised word after its
    first, or a word holding a digit; not an amount or a date) is missing from the newer."""
    length = _opening_phrase(tuple(old.words))
    return any(
        ((at > 0 and word[:1].isupper()) or any(c.isdigit() for c in word))
        and lower not in new.folded
        and lower not in old.values
        for at, (word, lower) in enumerate(zip(old.words[:length], old.lower[:length], strict=True))
    )


def _attribute_renamed(old: _Prepared, new: _Prepared) -> bool:
    """Whether the newer text names the older one's thing by every word the older opened with,
    gives it another amount or date, and words its attribute once otherwise: as a noun where
    the older used a verb ("The report is due on July 20" / "The deadline for the report moved
    to October 23"; "The gym membership costs 79 euros" / "The price of the gym membership
    changed to 12 euros")."""
    if not old.values or not new.values or old.values == new.values:
        return False
    opening = {w for w in old.lower[: _opening_phrase(tuple(old.words))] if w in old.content}
    if not opening or not opening <= new.content:
        return False
    said_otherwise = old.unvalued - opening - new.content
    named_otherwise = new.unvalued - old.content
    if len(said_otherwise) > 1 or len(named_otherwise) != 1:
        return False
    # The attribute's noun comes before the thing's name ("the price of ..."): a word after it
    # would be another thing of the same kind ("My number at the Zogen pool").
    (noun,) = named_otherwise
    first_name = min(new.lower.index(w) for w in opening)
    return new.lower.index(noun) < first_name


def _values_only_changed(old: _Prepared, new: _Prepared) -> bool:
    """Whether the two texts say the same words but for values (amounts with their units,
    dates, times), in any order, none of them in the older text's opening noun phrase (a
    number there names the thing: "The 9:40 train", "Room 101")."""
    if old.values == new.values or not old.values:
        return False
    if old.unvalued != new.unvalued:
        return False
    first_value = next(at for at, w in enumerate(old.lower) if w in old.values)
    return not _in_subject(old.words, first_value)


def _attribute_changed(old: _Prepared, new: _Prepared) -> bool:
    """Whether the newer text's change word names the change of an attribute the older one
    states ("Alice now lives in Porto" / "Alice moved to Berlin": moving changes where one
    lives; turning 34 changes one's age), both about the same named subject."""
    subject = _subject(old.lower)
    if subject is None or subject in SUBJECT_PRONOUNS or subject != _subject(new.lower):
        return False
    stated = set(old.plain)
    return any(stated & ATTRIBUTE_OF_CHANGE.get(w, frozenset()) for w in new.plain)


def _certain(old: _Prepared, new: _Prepared) -> str | None:
    """Why the newer text surely loses nothing the older one said, or None: the same words
    (a word saying *now* or *actually* aside), a negation added or dropped and nothing else,
    or words appended after the older text's last one."""
    a, b = old.plain, new.plain
    regions = [op for op in _opcodes(a, b) if op[0] != "equal"]
    if not regions:
        return "restated"
    if _negated(a, b, regions):
        return "negation"
    if len(regions) == 1 and _appended(a, b, regions[0], new.raw):
        return "more_detail"
    return None


class _Prepared(NamedTuple):
    raw: str  # as given
    all_words: list[str]  # as written
    folded: frozenset[str]  # every word, case folded
    plain: list[str]  # case folded, without the words that only say when (now, actually)
    words: list[str]  # without the change and time words
    lower: list[str]  # those, case folded
    content: frozenset[str]  # those that carry content (see ``_content``)
    stems: frozenset[str]  # the content words of ``plain``, as a negation compares them
    values: frozenset[str]  # the amounts, dates and times among ``lower``, with their units
    unvalued: frozenset[str]  # the content words but those
    marked: bool  # whether it says it is a change


@functools.lru_cache(maxsize=8192)
def _prepared(text: str) -> _Prepared:
    """A text's words for a judgement, once: a write is judged against up to four close
    memories, and a memory against many writes of its container."""
    all_words = words(text)
    kept, marked = _without_change_words(all_words)
    lower = [w.lower() for w in kept]
    folded_words = [w.lower() for w in all_words]
    timeless = _positions(folded_words, WHEN_WORDS, WHEN_PHRASES)
    plain = [w for at, w in enumerate(folded_words) if at not in timeless]
    values = frozenset(_values_in(lower))
    return _Prepared(
        raw=text,
        all_words=all_words,
        folded=frozenset(folded_words),
        plain=plain,
        words=kept,
        lower=lower,
        content=frozenset(_content(lower)),
        stems=frozenset(_stems_of(plain)),
        values=values,
        unvalued=frozenset(_content(lower)) - values,
        marked=marked,
    )


def _values_in(text: list[str]) -> set[str]:
    """The amounts, dates and times of a folded text, with the unit words after a number
    ("50 years old", "79 euros a month": up to two words, to a function word)."""
    found: set[str] = set()
    for at, word in enumerate(text):
        if word in CALENDAR_WORDS or word in ("am", "pm"):
            found.add(word)
        elif any(c.isdigit() for c in word) and _QUANTITY.fullmatch(word):
            found.add(word)
            for unit in text[at + 1 : at + 3]:
                if unit in FUNCTION_WORDS:
                    break
                found.add(unit)
    return found


def _content(text: list[str]) -> set[str]:
    """The content words of a folded text: no function word, pronoun or change word."""
    return {
        w
        for w in text
        if w not in FUNCTION_WORDS and w not in SUBJECT_PRONOUNS and w not in NEGATIONS
    }


def _without_change_words(text: list[str]) -> tuple[list[str], bool]:
    """``text`` without the words that say it is a change or when, and whether it said it is
    a change."""
    lower = [w.lower() for w in text]
    change = _positions(lower, CHANGE_WORDS, CHANGE_PHRASES)
    lasting = {
        at
        for at in change
        if lower[at] == "now" and any(w in DURATION_WORDS for w in lower[max(0, at - 4) : at])
    }
    drop = change | _positions(lower, TIME_WORDS, ())
    return [w for at, w in enumerate(text) if at not in drop], bool(change - lasting)


def _positions(
    lower: list[str], singles: frozenset[str], phrases: tuple[tuple[str, ...], ...]
) -> set[int]:
    found = {at for at, w in enumerate(lower) if w in singles}
    present = set(lower)
    for phrase in phrases:
        if phrase[0] not in present:
            continue
        for at in range(len(lower) - len(phrase) + 1):
            if tuple(lower[at : at + len(phrase)]) == phrase:
                found.update(range(at, at + len(phrase)))
    return found


def _all_quantities(
    regions: list[tuple[str, int, int, int, int]], a: list[str], b: list[str]
) -> bool:
    """Whether a change swaps only amounts, times or dates: a count, a price, an hour, a day
    (a thing has one at a time; a number naming the thing was caught before)."""
    return all(
        _is_quantity(text, at)
        for _, i1, i2, j1, j2 in regions
        for text, span in ((a, range(i1, i2)), (b, range(j1, j2)))
        for at in span
    )


def _is_quantity(text: list[str], at: int) -> bool:
    """A quantity with a unit (3pm, 20kg, "3 cats", "50 mg"), or a date ("March 3"); a bare
    number with neither is an item's number ("more detail on 5"), not an amount."""
    word, lower = text[at], text[at].lower()
    if lower in CALENDAR_WORDS or lower in ("am", "pm"):
        return True
    if not _QUANTITY.fullmatch(word):
        return False
    if not word.isdigit():
        return True  # its unit is part of it: 3pm, 15th, 7-day
    unit = at + 1 < len(text) and text[at + 1].lower() not in FUNCTION_WORDS
    dated = at > 0 and text[at - 1].lower() in CALENDAR_WORDS
    return unit or dated


def _single_valued(a: list[str], region: tuple[str, int, int, int, int]) -> bool:
    """Whether the words before a changed stretch hold a predicate with one value at a time
    (and do not speak of past experiences)."""
    before = a[: region[1]]
    return any(w in SINGLE_VALUED for w in before) and not any(w in EXPERIENCE_WORDS for w in a)


def _opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """The alignment of two word lists; adjacent changed stretches are one region."""
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    merged: list[tuple[str, int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in ops:
        if merged and tag != "equal" and merged[-1][0] != "equal":
            _, p1, _, q1, _ = merged[-1]
            merged[-1] = ("replace", p1, i2, q1, j2)
        else:
            merged.append((tag, i1, i2, j1, j2))
    return merged


def _subject_head_changed(a: list[str], region: tuple[str, int, int, int, int]) -> bool:
    """A change right before the text's first verb-like function word, with none before it,
    is the head of its subject ("Meeting room Velaro is ..." / "Meeting room Quintos is ...")."""
    tag, i1, i2, _, _ = region
    if tag != "replace" or i2 >= len(a) or a[i2] not in AUXILIARIES:
        return False
    return not any(w in FUNCTION_WORDS for w in a[:i1])


def _is_content(word: str) -> bool:
    return word not in FUNCTION_WORDS or word in SUBJECT_PRONOUNS


def _anchored(prefix: list[str]) -> bool:
    """Whether a shared opening holds a subject: a content word or a subject pronoun."""
    return any(_is_content(w) for w in prefix)


def _subject(text: list[str]) -> str | None:
    """The first word that may be a text's subject (a pronoun's contraction folded)."""
    for word in text:
        if _is_content(word):
            return word
    return None


def _identity_replaced(
    regions: list[tuple[str, int, int, int, int]], a: list[str], b: list[str]
) -> tuple[str, int, int, int, int] | None:
    """The first changed stretch that swaps one identifier for another."""
    for region in regions:
        tag, i1, i2, j1, j2 = region
        if tag == "replace" and _has_identity(a, i1, i2) and _has_identity(b, j1, j2):
            return region
    return None


def _in_subject(words: list[str], at: int) -> bool:
    """Whether word ``at`` of a text (as written) is in the noun phrase it opens with
    ("Invoice 4471", "Kafka broker 1", "My goldfish Hikral", "The 9:40 train")."""
    return at < _opening_phrase(tuple(words))


@functools.lru_cache(maxsize=8192)
def _opening_phrase(words: tuple[str, ...]) -> int:
    """How many words the noun phrase a text opens with holds: names, numbers, determiners,
    and the nouns a determiner or a name opened, up to a function word or a verb (a word in
    -s or -ed after a noun: "costs", "lives", "renamed"). A pronoun is a phrase alone."""
    opened = False
    for at, word in enumerate(words):
        lower = word.lower()
        if lower in SUBJECT_PRONOUNS:
            return at + 1 if at == 0 else at
        if lower in DETERMINERS or word[:1].isupper():
            opened = True
            continue
        if any(c.isdigit() for c in word):
            continue
        if lower in PHRASE_PREPOSITIONS and opened and at + 1 < len(words):
            continue  # "The bus from Faitratoth Square", "The chat channel of the dredu team"
        after_noun = at > 0 and words[at - 1].lower() not in DETERMINERS
        if lower in FUNCTION_WORDS or not opened or (after_noun and lower.endswith(("s", "ed"))):
            return at
    return len(words)


def _possessed_instead(a: list[str], b: list[str], region: tuple[str, int, int, int, int]) -> bool:
    """A possessive inserted in the opening noun phrase: the newer text speaks of something
    of the older's subject ("Alice is vegan" / "Alice's mum is not vegan")."""
    tag, i1, _, j1, _ = region
    return tag == "insert" and b[j1] == "'s" and _in_subject(a, i1 - 1)


def _subject_name_replaced(
    a: list[str], b: list[str], region: tuple[str, int, int, int, int]
) -> bool:
    """A name swapped for another inside the opening noun phrase, after words they share
    ("Alice Moreau ..." / "Alice Kowalski ...", "My goldfish Hikral ..." / "My goldfish Stazo
    ..."): two people who share a first name, two pets of one owner."""
    tag, i1, _, j1, _ = region
    if tag != "replace" or i1 == 0 or not (a[i1][:1].isupper() and b[j1][:1].isupper()):
        return False
    return _in_subject(a, i1)


def _has_identity(text: list[str], start: int, end: int) -> bool:
    """An identifier, or a number or a name right after a noun of numbered or named things
    ("port 8080", "room Velaro")."""
    for at in range(start, end):
        word = text[at]
        if _looks_like_identifier(word):
            return True
        after_noun = at > 0 and text[at - 1].lower() in IDENTITY_NOUNS
        if after_noun and (any(c.isdigit() for c in word) or word[:1].isupper()):
            return True
    return False


@functools.lru_cache(maxsize=65536)
def _looks_like_identifier(word: str) -> bool:
    """Letters and digits mixed (v2, atlas-17) or joined by _ (user_service); a quantity with
    its unit (3pm, 15th, 20kg, 7-day) is a value, not a name."""
    if _QUANTITY.fullmatch(word):
        return False
    has_digit = any(c.isdigit() for c in word)
    has_alpha = any(c.isalpha() for c in word)
    return has_alpha and (has_digit or "_" in word)


def _negated(a: list[str], b: list[str], regions: list[tuple[str, int, int, int, int]]) -> bool:
    """The change adds or drops a negation and nothing else: the same content words, but for
    an inflection ("likes" / "does not like")."""
    changed = [w for _, i1, i2, j1, j2 in regions for w in a[i1:i2] + b[j1:j2]]
    if not any(w in NEGATIONS for w in changed):
        return False
    return _stems_of(a) == _stems_of(b)


def _stems_of(text: list[str]) -> set[str]:
    """The content words of a folded text (pronouns included: a negation keeps the subject),
    a plural or third-person "s" left off."""
    return {
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
        for w in text
        if w not in NEGATIONS and (w not in FUNCTION_WORDS or w in SUBJECT_PRONOUNS)
    }


def _appended(a: list[str], b: list[str], region: tuple[str, int, int, int, int], raw: str) -> bool:
    """Words added after the older text's last word, not bound to it: detail on what it said
    ("I have a dog" / "... a dog named Rex"), not another thing named after it ("atlas" /
    "atlas-web", "the Go team" / "the Go team's lead")."""
    tag, i1, _, j1, _ = region
    if tag != "insert" or i1 != len(a) or not a or b[j1] in BINDING_WORDS:
        return False
    joined = re.compile(re.escape(a[-1]) + r"[-_/.'\u2019@]\w", re.IGNORECASE)
    return joined.search(raw) is None
