"""The words the sameness judgement reads: the word classes, a text split into its words and
prepared once for a judgement, and the word by word alignment of two texts."""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

import cydifflib

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
QUANTITY = re.compile(r"\d+(?:[.,:]\d+)?(?:[a-z]{1,3}|%|-[a-z]+)?", re.IGNORECASE)


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


class Prepared(NamedTuple):
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
    # The names of the noun phrase it opens with (a capitalised word after its first, or a
    # word holding a digit; not an amount or a date), case folded: what names its thing.
    opening_names: frozenset[str]


@functools.lru_cache(maxsize=8192)
def prepared(text: str) -> Prepared:
    """A text's words for a judgement, once: a write is judged against up to four close
    memories, and a memory against many writes of its container."""
    all_words = words(text)
    folded_words = [w.lower() for w in all_words]
    kept_at, marked = _without_change_words(folded_words)
    kept = [all_words[at] for at in kept_at]
    lower = [folded_words[at] for at in kept_at]
    timeless = _positions(folded_words, WHEN_WORDS, WHEN_PHRASES)
    plain = [w for at, w in enumerate(folded_words) if at not in timeless]
    values = frozenset(_values_in(lower))
    content = frozenset(_content(lower))
    opening = opening_phrase(tuple(kept))
    return Prepared(
        raw=text,
        all_words=all_words,
        folded=frozenset(folded_words),
        plain=plain,
        words=kept,
        lower=lower,
        content=content,
        stems=frozenset(stems_of(plain)),
        values=values,
        unvalued=content - values,
        marked=marked,
        opening_names=frozenset(
            folded
            for at, (word, folded) in enumerate(zip(kept[:opening], lower[:opening], strict=True))
            if ((at > 0 and word[:1].isupper()) or any(c.isdigit() for c in word))
            and folded not in values
        ),
    )


@functools.lru_cache(maxsize=8192)
def opening_phrase(words: tuple[str, ...]) -> int:
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


def _values_in(text: list[str]) -> set[str]:
    """The amounts, dates and times of a folded text, with the unit words after a number
    ("50 years old", "79 euros a month": up to two words, to a function word)."""
    found: set[str] = set()
    for at, word in enumerate(text):
        if word in CALENDAR_WORDS or word in ("am", "pm"):
            found.add(word)
        elif word[:1].isdigit() and QUANTITY.fullmatch(word):  # a quantity opens with a digit
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


def _without_change_words(lower: list[str]) -> tuple[list[int], bool]:
    """The positions of the folded words ``lower`` but those that say it is a change or when,
    and whether it said it is a change."""
    change = _positions(lower, CHANGE_WORDS, CHANGE_PHRASES)
    lasting = {
        at
        for at in change
        if lower[at] == "now" and any(w in DURATION_WORDS for w in lower[max(0, at - 4) : at])
    }
    drop = change | _positions(lower, TIME_WORDS, ())
    return [at for at in range(len(lower)) if at not in drop], bool(change - lasting)


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


def stems_of(text: list[str]) -> set[str]:
    """The content words of a folded text (pronouns included: a negation keeps the subject),
    a plural or third-person "s" left off."""
    return {
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
        for w in text
        if w not in NEGATIONS and (w not in FUNCTION_WORDS or w in SUBJECT_PRONOUNS)
    }


def opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """The alignment of two word lists; adjacent changed stretches are one region."""
    # cydifflib: difflib's algorithm compiled, the same alignments (checked on 60,000 pairs of
    # stored facts and chat turns) in a quarter of the time; a write aligns about nine pairs.
    ops = cydifflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    merged: list[tuple[str, int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in ops:
        if merged and tag != "equal" and merged[-1][0] != "equal":
            _, p1, _, q1, _ = merged[-1]
            merged[-1] = ("replace", p1, i2, q1, j2)
        else:
            merged.append((tag, i1, i2, j1, j2))
    return merged


def over_determiners(
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
