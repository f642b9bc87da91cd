"""Which thing a text speaks of, for the sameness judgement: the noun phrase it opens with, its
subject, its identifiers and names; and the changes between two texts that make them two
things of one template ("The alpha service ..." / "The beta service ..."), not one thing with
a new value."""

from __future__ import annotations

import functools

from .sameness_words import (
    AUXILIARIES,
    CALENDAR_WORDS,
    FUNCTION_WORDS,
    IDENTITY_NOUNS,
    QUANTITY,
    SUBJECT_PRONOUNS,
    Prepared,
    opening_phrase,
)

# A changed stretch followed by this many shared content words names a thing, not a value.
TAIL_OF_A_NAME = 2


def subject_head_changed(a: list[str], region: tuple[str, int, int, int, int]) -> bool:
    """A change right before the text's first verb-like function word, with none before it,
    is the head of its subject ("Meeting room Velaro is ..." / "Meeting room Quintos is ...")."""
    tag, i1, i2, _, _ = region
    if tag != "replace" or i2 >= len(a) or a[i2] not in AUXILIARIES:
        return False
    return not any(w in FUNCTION_WORDS for w in a[:i1])


def _is_content(word: str) -> bool:
    return word not in FUNCTION_WORDS or word in SUBJECT_PRONOUNS


def anchored(prefix: list[str]) -> bool:
    """Whether a shared opening holds a subject: a content word or a subject pronoun."""
    return any(_is_content(w) for w in prefix)


def subject_of(text: list[str]) -> str | None:
    """The first word that may be a text's subject (a pronoun's contraction folded)."""
    for word in text:
        if _is_content(word):
            return word
    return None


def identity_replaced(
    regions: list[tuple[str, int, int, int, int]], a: list[str], b: list[str]
) -> tuple[str, int, int, int, int] | None:
    """The first changed stretch that swaps one identifier for another."""
    for region in regions:
        tag, i1, i2, j1, j2 = region
        if tag == "replace" and _has_identity(a, i1, i2) and _has_identity(b, j1, j2):
            return region
    return None


def in_subject(words: list[str], at: int) -> bool:
    """Whether word ``at`` of a text (as written) is in the noun phrase it opens with
    ("Invoice 4471", "Kafka broker 1", "My goldfish Hikral", "The 9:40 train")."""
    return at < opening_phrase(tuple(words))


def possessed_instead(a: list[str], b: list[str], region: tuple[str, int, int, int, int]) -> bool:
    """A possessive inserted in the opening noun phrase: the newer text speaks of something
    of the older's subject ("Alice is vegan" / "Alice's mum is not vegan")."""
    tag, i1, _, j1, _ = region
    return tag == "insert" and b[j1] == "'s" and in_subject(a, i1 - 1)


def subject_name_replaced(
    a: list[str], b: list[str], region: tuple[str, int, int, int, int]
) -> bool:
    """A name swapped for another inside the opening noun phrase, after words they share
    ("Alice Moreau ..." / "Alice Kowalski ...", "My goldfish Hikral ..." / "My goldfish Stazo
    ..."): two people who share a first name, two pets of one owner."""
    tag, i1, _, j1, _ = region
    if tag != "replace" or i1 == 0 or not (a[i1][:1].isupper() and b[j1][:1].isupper()):
        return False
    return in_subject(a, i1)


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
    if QUANTITY.fullmatch(word):
        return False
    has_digit = any(c.isdigit() for c in word)
    has_alpha = any(c.isalpha() for c in word)
    return has_alpha and (has_digit or "_" in word)


def named_before_the_rest(a: list[str], region: tuple[str, int, int, int, int]) -> bool:
    """Whether a replaced stretch of the older text (as written) is a name followed by a
    shared stretch holding two content words or more: it names what the rest is said of, it
    is not its value. A name: a capitalised word inside the text, or any word of the noun
    phrase the text opens with."""
    tag, i1, i2, _, _ = region
    stretch = a[i1:i2]
    if tag != "replace" or all(
        w.lower() in CALENDAR_WORDS or QUANTITY.fullmatch(w) for w in stretch
    ):
        return False
    named = in_subject(a, i1) or any(
        w[:1].isupper() and w.lower() not in FUNCTION_WORDS for w in stretch if i1 > 0
    )
    after = [w for w in a[i2:] if w.lower() not in FUNCTION_WORDS]
    return named and len(after) >= TAIL_OF_A_NAME


def opening_name_dropped(old: Prepared, new: Prepared) -> bool:
    """Whether a name of the older text's opening noun phrase (a capitalised word after its
    first, or a word holding a digit; not an amount or a date) is missing from the newer."""
    return not old.opening_names <= new.folded
