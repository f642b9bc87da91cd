"""Splitting documents into chunks for recall: deterministic, so a rebuild finds the same ones.

Paragraphs (blank-line separated) are packed greedily up to ``MAX_CHARS``; a longer paragraph
is split at sentence ends, and a longer sentence at whitespace (or hard, as a last resort).
Each chunk keeps its character offsets in the document, so a result points into the source.
"""

from __future__ import annotations

import re
from typing import NamedTuple

RECIPE = "paragraphs-1200-v1"
MAX_CHARS = 1200

_PARAGRAPH = re.compile(r"\S(?:.*?\S)?(?=\n\s*\n|\s*$)", re.DOTALL)
_SENTENCE = re.compile(r"\S.*?(?:[.!?](?=\s)|$)", re.DOTALL)


class Chunk(NamedTuple):
    start: int
    end: int
    text: str


def chunk(text: str, max_chars: int = MAX_CHARS) -> list[Chunk]:
    pieces = [
        piece
        for match in _PARAGRAPH.finditer(text)
        for piece in _fit(text, match.start(), match.end(), max_chars)
    ]
    chunks: list[Chunk] = []
    start = end = -1
    for piece_start, piece_end in pieces:
        if start >= 0 and piece_end - start <= max_chars:
            end = piece_end
            continue
        if start >= 0:
            chunks.append(Chunk(start, end, text[start:end]))
        start, end = piece_start, piece_end
    if start >= 0:
        chunks.append(Chunk(start, end, text[start:end]))
    return chunks


def _fit(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """Spans within [start, end) of at most ``max_chars``: sentences, then words, then cuts."""
    if end - start <= max_chars:
        return [(start, end)]
    spans: list[tuple[int, int]] = []
    for match in _SENTENCE.finditer(text, start, end):
        s, e = match.start(), match.end()
        while e - s > max_chars:
            cut = text.rfind(" ", s, s + max_chars)
            cut = cut if cut > s else s + max_chars
            spans.append((s, cut))
            s = cut
            while s < e and text[s].isspace():
                s += 1
        if s < e:
            spans.append((s, e))
    return spans
