"""Whether a new text is the same fact as an older one with a new value: the judgement the
write decision acts on, with the evidence a ``memory.superseded`` event records.

Pure: a function of the two texts and their cosine similarity. ``judge`` answers one of
``same`` (supersede: the new text is the next version of the old one), ``possible`` (keep
both, linked: the new one may update the old) or ``distinct``.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ..projections.analysis import plain_words

Verdict = Literal["same", "possible", "distinct"]


class Gates(msgspec.Struct, frozen=True, kw_only=True):
    """The cosine similarities a pair must reach to be looked at, for one embedder: its
    cosines run higher or lower with the model, so each has its own."""

    same: float  # for a supersede
    possible: float  # for a link


# Today's rule: a near duplicate (cosine at or above the supersede threshold) that shares at
# least half of the two texts' distinct words.
MIN_SHARED_WORDS = 0.5
DEFAULT_GATES = Gates(same=0.85, possible=0.85)


class Judgement(msgspec.Struct, frozen=True, kw_only=True):
    verdict: Verdict
    similarity: float
    shared_words: float  # Jaccard of the two texts' distinct words
    removed: list[str]  # words of the old text the new one does not have
    added: list[str]  # words of the new text the old one does not have
    reason: str  # a stable code saying which rule decided


def gates_for(embedder_name: str, supersede_threshold: float | None = None) -> Gates:
    """The gates of an embedder (``supersede_threshold``, when set, replaces the supersede
    gate)."""
    gates = DEFAULT_GATES
    if supersede_threshold is not None:
        gates = msgspec.structs.replace(gates, same=supersede_threshold)
    return gates


def judge(old: str, new: str, similarity: float, gates: Gates) -> Judgement:
    a, b = plain_words(old), plain_words(new)
    union = len(a | b)
    shared = len(a & b) / union if union else 1.0
    removed, added = sorted(a - b), sorted(b - a)

    def verdict(kind: Verdict, reason: str) -> Judgement:
        return Judgement(
            verdict=kind,
            similarity=similarity,
            shared_words=shared,
            removed=removed,
            added=added,
            reason=reason,
        )

    if similarity < gates.same:
        return verdict("distinct", "dissimilar")
    if shared < MIN_SHARED_WORDS:
        return verdict("distinct", "few_shared_words")
    return verdict("same", "near_duplicate")
