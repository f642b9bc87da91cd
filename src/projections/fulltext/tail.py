"""The full-text index's tail: its uncommitted documents, kept in memory and scored by BM25.

Why a hand-written BM25 over the tail rather than a second, in-memory tantivy index: scores
from two lists can only be merged if they come from one scoring function, with the same corpus
statistics (document count, document frequencies, average length). A RAM index holding a few
fresh documents computes its idf from those few, which ranks a fresh memory below old ones
(measured over 10k short documents: a new document matching both query terms scored 2.3 in a
three-document RAM index, under the 6.1 of old documents matching one term, and 18.8 once
committed). Here a tail document is scored exactly as tantivy scores the committed ones at that
moment: tantivy's formula (k1 = 1.2, b = 0.75, its one-byte length quantisation), its
tokenizer, and the disk index's statistics, so a tail document and a committed document with the
same text get the same score (tested). Only when nothing is committed yet does the tail use its
own statistics. The tail is small, up to ``commit_docs`` documents plus what arrives during a
commit: with 500 documents in it a search took 0.13 ms instead of 0.06 ms (10k committed
documents, ``bench/indexes.py``). The disk's document count
and average length are read once per commit from tantivy's explanation of one hit, since the
bindings expose no other way to them.
"""

from __future__ import annotations

import bisect
import json
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import tantivy
from tantivy import Query

from .analysis import ANALYZER, clean
from .disk import SCHEMA, TEXT

__all__ = ["K1", "B", "DiskStats", "Entry", "Tail", "disk_stats", "make_entry"]

# tantivy's BM25 (src/query/bm25.rs).
K1 = 1.2
B = 0.75


def _fieldnorm_table() -> list[int]:
    """tantivy stores a field's length in one byte: exact up to 40, then coarser steps."""
    table = []
    for code in range(256):
        if code < 24:
            table.append(code)
            continue
        part = code - 24
        bits, shift = part & 0b111, part >> 3
        table.append(24 + (bits if shift == 0 else (bits | 8) << (shift - 1)))
    return table


_FIELDNORMS = _fieldnorm_table()


def _quantised_length(tokens: int) -> int:
    """The length tantivy scores a document of ``tokens`` tokens with."""
    return _FIELDNORMS[bisect.bisect_right(_FIELDNORMS, tokens) - 1]


@dataclass(frozen=True, slots=True, eq=False)
class Entry:
    """A tail document, tokenised once when it is added."""

    label: int
    container: str
    text: str
    terms: dict[str, int]
    tokens: int
    length: int  # ``tokens`` quantised as tantivy stores it, which is what BM25 sees


@dataclass(frozen=True, slots=True)
class DiskStats:
    """The corpus statistics tantivy scores with: documents (deleted ones too) and tokens."""

    docs: int
    tokens: float


def make_entry(label: int, container: str, text: str) -> Entry:
    if not 0 <= label < 2**63:
        raise ValueError(f"label {label} is not an i64 row id")
    text = clean(text)
    tokens = ANALYZER.analyze(text)
    return Entry(
        label=label,
        container=clean(container),
        text=text,
        terms=dict(Counter(tokens)),
        tokens=len(tokens),
        length=_quantised_length(len(tokens)),
    )


class Tail:
    """The tail documents as a small inverted index. Not thread-safe: the owner locks."""

    __slots__ = ("entries", "postings", "shadowed", "tokens")

    def __init__(self) -> None:
        self.entries: dict[int, Entry] = {}
        self.postings: dict[str, dict[int, int]] = {}
        self.tokens = 0
        # Tail labels that may also have an older document on disk (a replayed or repeated
        # add): excluded from disk results. Fresh labels, the usual case, need no exclusion,
        # which keeps the disk query as cheap as with an empty tail.
        self.shadowed: set[int] = set()

    def __contains__(self, label: int) -> bool:
        return label in self.entries

    def get(self, label: int) -> Entry | None:
        return self.entries.get(label)

    def put(self, entry: Entry, *, shadows: bool) -> None:
        """Hold ``entry`` in place of any tail document with its label; ``shadows``: an older
        version of it may be on disk."""
        self.drop(entry.label)
        if shadows:
            self.shadowed.add(entry.label)
        self.entries[entry.label] = entry
        for term, tf in entry.terms.items():
            self.postings.setdefault(term, {})[entry.label] = tf
        self.tokens += entry.tokens

    def drop(self, label: int) -> None:
        """Forget the tail document ``label``, if any."""
        entry = self.entries.pop(label, None)
        if entry is None:
            return
        self.shadowed.discard(label)
        for term in entry.terms:
            postings = self.postings[term]
            del postings[label]
            if not postings:
                del self.postings[term]
        self.tokens -= entry.tokens

    def score(
        self,
        searcher: tantivy.Searcher,
        stats: DiskStats,
        terms: list[str],
        container: str | None,
    ) -> dict[int, float]:
        """BM25 of the tail documents matching ``terms``, with the disk index's statistics.

        ``searcher`` and ``stats`` belong to the same commit.
        """
        if not self.entries:
            return {}
        on_disk = stats.docs > 0 and stats.tokens > 0
        if on_disk:
            docs, average = stats.docs, stats.tokens / stats.docs
        else:
            docs, average = len(self.entries), self.tokens / len(self.entries) or 1.0
        scores: dict[int, float] = {}
        for term in terms:
            postings = self.postings.get(term)
            if not postings:
                continue
            df = searcher.doc_freq(TEXT, term) if on_disk else len(postings)
            idf = math.log(1.0 + (max(docs, df) - df + 0.5) / (df + 0.5))
            for label, tf in postings.items():
                entry = self.entries[label]
                if container is not None and entry.container != container:
                    continue
                norm = K1 * (1.0 - B + B * entry.length / average)
                scores[label] = scores.get(label, 0.0) + idf * (K1 + 1.0) * tf / (tf + norm)
        return scores


def disk_stats(searcher: tantivy.Searcher) -> DiskStats:
    """Document count and token total tantivy's BM25 uses, read from an explanation.

    tantivy counts deleted documents until a merge, in the document count and in document
    frequencies alike; the bindings expose neither that count nor the token total, but the
    explanation of a term's score on any document states both.
    """
    if searcher.num_docs == 0:
        return DiskStats(docs=0, tokens=0.0)
    for _, address in searcher.search(Query.all_query(), 8).hits:
        text = searcher.doc(address).get_first(TEXT)
        tokens = ANALYZER.analyze(text) if isinstance(text, str) else []
        if not tokens:
            continue
        explained = Query.term_query(SCHEMA, TEXT, tokens[0]).explain(searcher, address)
        values = _explained_values(json.loads(explained.to_json()))
        docs, average = values.get("N"), values.get("avgdl")
        if docs is not None and average is not None:
            return DiskStats(docs=int(docs), tokens=docs * average)
    return DiskStats(docs=searcher.num_docs, tokens=0.0)


def _explained_values(node: Any) -> dict[str, float]:
    """The named values (``"N, total number of docs"`` → ``N``) of an explanation tree."""
    found: dict[str, float] = {}
    if isinstance(node, dict):
        name = str(node.get("description", "")).split(",", 1)[0]
        if isinstance(node.get("value"), int | float):
            found.setdefault(name, float(node["value"]))
        for child in node.get("details", ()):
            for key, value in _explained_values(child).items():
                found.setdefault(key, value)
    return found
