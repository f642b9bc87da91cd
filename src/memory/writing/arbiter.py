"""Arbitration of an unsure pair by a local model: same fact, an update, or different facts.

The write decision is sure of little when two close texts differ in more than a value
("Tom speaks Spanish" / "Tom speaks Japanese"): it keeps both, linked. When the user has a
local model configured and turns arbitration on, such a pair may be put to it, Mem0-style,
with a short timeout. Its answer decides only that pair; any failure (no answer in time, an
answer that is not one of the three words) keeps both, as without it. This module holds what
is asked and how the answer is read; the call itself is a shell's (``proxy/arbiter.py``).
"""

from __future__ import annotations

import re
from typing import Literal, Protocol

import msgspec

Ruling = Literal["same", "update", "different"]

PROMPT = (
    "You compare two facts a user's assistant remembered about the user, an older one and a"
    " newer one. Answer with one word. SAME: they state the same fact. UPDATE: the newer one"
    " replaces the older one (a changed value, a correction). DIFFERENT: both can be true at"
    " once (different things, or two items of a list)."
)
_WORD = re.compile(r"[A-Za-z]+")
_RULINGS: dict[str, Ruling] = {"same": "same", "update": "update", "different": "different"}


class Arbitration(msgspec.Struct, frozen=True, kw_only=True):
    """What the model answered for one pair, or why it did not."""

    ruling: Ruling | None  # None: no usable answer (the pair is kept, linked)
    answer: str | None = None  # the model's words, as it wrote them
    model: str | None = None
    failure: str | None = None  # a reason code: timeout, upstream_error, unreadable...
    latency_ms: float = 0.0


class Arbiter(Protocol):
    def arbitrate(self, older: str, newer: str) -> Arbitration:
        """The model's ruling on a pair; never raises (a failure is an ``Arbitration``)."""
        ...


def messages(older: str, newer: str) -> list[dict[str, str]]:
    """The chat messages that put a pair to the model."""
    return [
        {"role": "system", "content": PROMPT},
        {"role": "user", "content": f"Older: {older}\nNewer: {newer}\nAnswer:"},
    ]


def ruling_of(answer: str) -> Ruling | None:
    """The ruling an answer gives: its first word, if it is one of the three."""
    found = _WORD.search(answer)
    return _RULINGS.get(found.group(0).lower()) if found else None
