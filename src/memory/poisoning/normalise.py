"""How a text is read before the poisoning rules: invisible characters stripped (and what tag
characters spell), the normalised views of what is left, and its clauses."""

from __future__ import annotations

import re
import unicodedata

import msgspec

# Characters that render as nothing: the usual carriers of hidden instructions.
ZERO_WIDTH = frozenset("\u200b\u2060\u2061\u2062\u2063\u2064\ufeff\u180e\u034f")
# Joiners and the soft hyphen are legitimate (emoji sequences, Persian, hyphenation): only
# counted as hidden between two ASCII letters, where they only serve to break a word up.
JOINERS = frozenset("\u200c\u200d\u00ad")
# Bidi embeddings, overrides and isolates reorder what is shown against what is read.
BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f")
TAGS = range(0xE0000, 0xE0080)
# Cyrillic and Greek letters that look like Latin ones ("ignore" spelt with Cyrillic i, o, e).
HOMOGLYPHS = str.maketrans(
    "авеёіїјклмнорстухѕԁһԛԝӏαβεικνορτυχϲ",
    "abeeiijklmhopctyxsdhqwlabeiknoptuxc",
)
# Leetspeak in a word that mixes letters with these: "pr3v10us" -> "previous".
LEET = str.maketrans("0134578@$!|", "oieastbasii")
_LEET_WORD = re.compile(r"(?<![\w@$!|])(?=[\w@$!|]*[a-z])(?=[\w@$!|]*[0134578@$!|])[\w@$!|]{3,}")
# Five or more single characters in a row, each set apart: "i g n o r e", "i.g.n.o.r.e".
_SPACED = re.compile(r"(?:(?<![\w])\w[ .\-_*|/]){4,}\w(?![\w])")
_CLAUSE = re.compile(r"[.!?;]+(?:\s+|$)|\n+|:\s+")


class Views(msgspec.Struct, frozen=True):
    plain: str  # NFKC, casefolded, look-alikes mapped, whitespace collapsed
    words: str  # plain with leetspeak undone
    squashed: str  # its letters only, when it spaces letters out ("" otherwise)


def strip_invisible(text: str) -> tuple[str, str, list[str]]:
    """The text without invisible characters, what its tag characters spell, and which kinds
    of hidden character it held."""
    kept: list[str] = []
    spelled: list[str] = []
    kinds: list[str] = []
    for i, ch in enumerate(text):
        code = ord(ch)
        if code in TAGS:
            if 0xE0020 <= code <= 0xE007E:
                spelled.append(chr(code - 0xE0000))
            kinds.append("tag characters")
        elif ch in ZERO_WIDTH:
            if not (ch == "\ufeff" and i == 0):  # a byte-order mark at the start is benign
                kinds.append("zero-width characters")
        elif ch in BIDI:
            kinds.append("bidi controls")
        elif ch in JOINERS:
            before, after = text[i - 1 : i], text[i + 1 : i + 2]
            if before.isascii() and before.isalpha() and after.isascii() and after.isalpha():
                kinds.append("zero-width characters")
        else:
            kept.append(ch)
    return "".join(kept), "".join(spelled), sorted(set(kinds))


def views_of(text: str) -> Views:
    plain = unicodedata.normalize("NFKC", text).casefold()
    plain = "".join(c for c in unicodedata.normalize("NFKD", plain) if not unicodedata.combining(c))
    plain = plain.translate(HOMOGLYPHS).replace("\u2019", "'")
    spaced = _SPACED.search(plain) is not None
    plain = re.sub(r"[ \t\r\f\v]+", " ", plain).strip()
    words = _LEET_WORD.sub(lambda m: m.group().translate(LEET), plain)
    return Views(plain, words, re.sub(r"[^a-z]", "", words) if spaced else "")


def clauses_of(text: str) -> list[str]:
    return [c.strip() for c in _CLAUSE.split(text) if c.strip()]
