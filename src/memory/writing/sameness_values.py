"""Whether a change between two texts gives one thing a new value, for the sameness judgement:
other amounts, dates or times in the same words, an attribute worded otherwise, a change word
naming the attribute it changes, a predicate that holds one value at a time."""

from __future__ import annotations

from .sameness_things import in_subject, subject_of
from .sameness_words import (
    ATTRIBUTE_OF_CHANGE,
    CALENDAR_WORDS,
    EXPERIENCE_WORDS,
    FUNCTION_WORDS,
    QUANTITY,
    SINGLE_VALUED,
    SUBJECT_PRONOUNS,
    Prepared,
    opening_phrase,
)


def values_only_changed(old: Prepared, new: Prepared) -> bool:
    """Whether the two texts say the same words but for values (amounts with their units,
    dates, times), in any order, none of them in the older text's opening noun phrase (a
    number there names the thing: "The 9:40 train", "Room 101")."""
    if old.values == new.values or not old.values:
        return False
    if old.unvalued != new.unvalued:
        return False
    first_value = next(at for at, w in enumerate(old.lower) if w in old.values)
    return not in_subject(old.words, first_value)


def attribute_renamed(old: Prepared, new: Prepared) -> bool:
    """Whether the newer text names the older one's thing by every word the older opened with,
    gives it another amount or date, and words its attribute once otherwise: as a noun where
    the older used a verb ("The report is due on July 20" / "The deadline for the report moved
    to October 23"; "The gym membership costs 79 euros" / "The price of the gym membership
    changed to 12 euros")."""
    if not old.values or not new.values or old.values == new.values:
        return False
    opening = {w for w in old.lower[: opening_phrase(tuple(old.words))] if w in old.content}
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


def attribute_changed(old: Prepared, new: Prepared) -> bool:
    """Whether the newer text's change word names the change of an attribute the older one
    states ("Alice now lives in Porto" / "Alice moved to Berlin": moving changes where one
    lives; turning 34 changes one's age), both about the same named subject."""
    subject = subject_of(old.lower)
    if subject is None or subject in SUBJECT_PRONOUNS or subject != subject_of(new.lower):
        return False
    stated = set(old.plain)
    return any(stated & ATTRIBUTE_OF_CHANGE.get(w, frozenset()) for w in new.plain)


def all_quantities(
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
    if not QUANTITY.fullmatch(word):
        return False
    if not word.isdigit():
        return True  # its unit is part of it: 3pm, 15th, 7-day
    unit = at + 1 < len(text) and text[at + 1].lower() not in FUNCTION_WORDS
    dated = at > 0 and text[at - 1].lower() in CALENDAR_WORDS
    return unit or dated


def single_valued_before(a: list[str], region: tuple[str, int, int, int, int]) -> bool:
    """Whether the words before a changed stretch hold a predicate with one value at a time
    (and do not speak of past experiences)."""
    before = a[: region[1]]
    return any(w in SINGLE_VALUED for w in before) and not any(w in EXPERIENCE_WORDS for w in a)
