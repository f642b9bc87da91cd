"""The full-text index: BM25 over memory versions, kept in tantivy on disk, with a memory tail.

A tantivy commit costs tens to hundreds of milliseconds even for one document (60-340 ms
measured on this class of machine), so writes do not commit. Each write
goes to two places: a queue of operations for the on-disk index, and the *tail*, a small
in-memory inverted index of the documents added since the last commit. ``search`` asks tantivy
for the committed documents and scores the tail itself, then merges the two lists. A committer
flushes the queue in batches (every ``commit_interval`` seconds, or at once when
``commit_docs`` operations wait), reloads the reader, and only then drops the flushed
documents from the tail, so every write is visible from the moment ``add`` returns.

Commit policy: by default a daemon thread commits 0.5 s after the oldest waiting write, or as
soon as 1000 operations wait, whichever comes first; ``background=False`` leaves that to the
owner (``commit_if_due()``, ``commit()``). A thread costs the callers nothing: tantivy releases
the GIL while it commits, so adds and searches carry on, and adds never wait for a commit
because they only touch the tail and the queue.

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

Deletes hide a label at once: until the delete is committed, the label is excluded from the
disk query. Adds are upserts (delete by label, then add), so replaying a write is harmless.

Durability and recovery: ``last_seq``, the log position up to which every operation is
committed, is written to a sidecar (``fulltext.json``) after each commit. A crash loses only the
uncommitted tail; the owner replays the log from ``last_seq``. A crash between a commit and its
sidecar replays a few operations twice, which the upserts absorb.

Erasure: tantivy keeps deleted documents in its segment files until a merge, and the bindings
cannot force a merge, so ``purge`` rebuilds the index from its surviving documents (their text
is stored for that reason) in a fresh directory and swaps it in. The purge's own seq reaches the
sidecar only after the swap, so a crash mid-purge replays it.

One writer per directory: a second ``FullTextIndex`` on the same directory, in this process or
another, raises ``DataDirLocked``.

Layout::

    <directory>/writer.lock    flock held while open
    <directory>/fulltext.json  {"format": 2, "last_seq": n}; another format: rebuilt from the log
    <directory>/index/         the tantivy index (index.new/, index.old/ only during a purge)
"""

from __future__ import annotations

import bisect
import contextlib
import fcntl
import heapq
import json
import logging
import math
import os
import shutil
import threading
import time
import weakref
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple, Self

import msgspec
import tantivy
from tantivy import Occur, Query

from ..errors import DataDirLocked
from ..fsync import fsync_path, fsync_tree

__all__ = ["FullTextIndex", "TextDoc"]

log = logging.getLogger(__name__)

FORMAT = 2  # 2: the text field is analysed by ``_ANALYZER`` (stop words, stemming)
INDEX_DIR = "index"
NEW_DIR = "index.new"
OLD_DIR = "index.old"
SIDECAR = "fulltext.json"
LOCK_FILE = "writer.lock"

DEFAULT_COMMIT_INTERVAL = 0.5  # seconds a write may wait in the tail before its commit
DEFAULT_COMMIT_DOCS = 1000  # operations that trigger a commit without waiting
WRITER_HEAP = 50_000_000  # tantivy needs at least 15 MB per indexing thread
MAX_QUERY_TERMS = 256  # distinct terms of a query used; the rest are ignored
MAX_TOKEN_BYTES = 40  # tantivy's default tokenizer drops longer tokens

# tantivy's BM25 (src/query/bm25.rs).
K1 = 1.2
B = 0.75

_LABEL = "label"
_CONTAINER = "container"
_TEXT = "text"
TOKENIZER = "mnemolog_en"  # the text field's analyzer (``_ANALYZER``)


def _build_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_integer_field(_LABEL, stored=True, indexed=True, fast=True)  # i64
    builder.add_text_field(_CONTAINER, stored=True, tokenizer_name="raw")
    # stored so ``purge`` can rebuild without it
    builder.add_text_field(_TEXT, stored=True, tokenizer_name=TOKENIZER)
    return builder.build()


_SCHEMA = _build_schema()


def _words_analyzer(*filters: tantivy.Filter) -> tantivy.TextAnalyzer:
    builder = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(MAX_TOKEN_BYTES))
        .filter(tantivy.Filter.lowercase())
    )
    for extra in filters:
        builder = builder.filter(extra)
    return builder.build()


# The text field's analyzer, registered on every index this module opens, so query terms and
# tail terms are exactly the terms tantivy indexed. tantivy's "default" pipeline, then Lucene's
# English stop words and the Snowball English stemmer: "researching" finds "research", and
# "the" or "is" no longer add their small idf to every document. On bench/retrieval.py (fast
# tier) recall_all@5 rose from 0.445 to 0.457 on LoCoMo and from 0.669 to 0.690 on
# LongMemEval turns.
_ANALYZER = _words_analyzer(tantivy.Filter.stopword("english"), tantivy.Filter.stemmer("english"))
# Words that make a sentence a question (interrogatives, auxiliary and modal verbs) but say
# nothing of what it is about. Queries to a memory are mostly questions: searched for, these
# words ranked other questions first ("How did you get Luna?" above "I bought it a year ago in
# Paris"). They are dropped from queries only; stored text keeps them. Fast tier, ranked
# offline on the candidates the bench/retrieval.py stores returned: recall_all@5 0.457 -> 0.475
# on LoCoMo, 0.690 -> 0.716 on LongMemEval turns.
QUESTION_WORDS = (
    *("what", "when", "where", "who", "whom", "whose", "which", "why", "how"),
    *("do", "does", "did", "have", "has", "had"),
    # Not "may": it is also a month, and a memory's date is often what a question is about.
    *("can", "could", "would", "should", "will", "shall", "might", "must"),
)
_QUERY_ANALYZER = _words_analyzer(
    tantivy.Filter.stopword("english"),
    tantivy.Filter.custom_stopword(list(QUESTION_WORDS)),
    tantivy.Filter.stemmer("english"),
)
# Words as written (lowercased), for comparing two texts word by word.
_PLAIN = _words_analyzer()


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


def _clean(text: str) -> str:
    """``text`` as valid UTF-8: lone surrogates cannot cross into tantivy."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def plain_words(text: str) -> frozenset[str]:
    """The distinct words of ``text``, lowercased, stop words kept and nothing stemmed."""
    return frozenset(_PLAIN.analyze(_clean(text)))


def query_terms(query: str) -> list[str]:
    """The distinct terms of ``query`` as tantivy indexes them, question words left out, in
    order, at most 256.

    Queries are built from these terms, never parsed, so no query text can be a syntax error.
    """
    return list(dict.fromkeys(_QUERY_ANALYZER.analyze(_clean(query))))[:MAX_QUERY_TERMS]


class TextDoc(NamedTuple):
    """One document to index: a memory version's row id, its container and its text."""

    label: int
    container: str
    text: str


@dataclass(frozen=True, slots=True, eq=False)
class _Entry:
    """A tail document, tokenised once when it is added."""

    label: int
    container: str
    text: str
    terms: dict[str, int]
    tokens: int
    length: int  # ``tokens`` quantised as tantivy stores it, which is what BM25 sees


@dataclass(frozen=True, slots=True, eq=False)
class _Op:
    """A queued change: an upsert (``entry``), a delete (``label`` only) or just a seq."""

    label: int | None
    entry: _Entry | None
    seq: int | None


@dataclass(frozen=True, slots=True)
class _DiskStats:
    """The corpus statistics tantivy scores with: documents (deleted ones too) and tokens."""

    docs: int
    tokens: float


class _Sidecar(msgspec.Struct, frozen=True, kw_only=True):
    format: int
    last_seq: int


class FullTextIndex:
    """BM25 search over ``(label, container, text)`` documents, stored under ``directory``.

    With ``background=True`` (the default) a daemon thread commits when a commit is due; with
    ``background=False`` the owner calls ``commit_if_due()`` or ``commit()`` itself. ``close()``
    commits whatever waits. Every method is thread-safe.
    """

    def __init__(
        self,
        directory: Path | str,
        *,
        commit_interval: float = DEFAULT_COMMIT_INTERVAL,
        commit_docs: int = DEFAULT_COMMIT_DOCS,
        background: bool = True,
        heap_size: int = WRITER_HEAP,
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._commit_interval = commit_interval
        self._commit_docs = commit_docs
        self._heap_size = heap_size
        self._lock_fd = _acquire_lock(self.directory)
        try:
            _finish_interrupted_purge(self.directory)
            last_seq = _read_sidecar(self.directory)
            if last_seq is None:  # an index of another format: analysed otherwise, rebuild it
                log.warning(
                    "the full-text index in %s has another format: it is rebuilt from the log",
                    self.directory,
                )
                shutil.rmtree(self.directory / INDEX_DIR, ignore_errors=True)
            self._last_seq = last_seq or 0
            self._index, reset = _open_index(self.directory / INDEX_DIR)
            if reset:
                # Before anything else: a crash now must not leave the old seq beside an
                # empty index.
                _write_sidecar(self.directory, 0)
                self._last_seq = 0
            self._writer = _open_writer(self._index, heap_size)
        except BaseException:
            os.close(self._lock_fd)
            raise
        # ``_write`` serialises use of the tantivy writer (commits, purges); ``_state`` guards
        # the tail, the queue and the searcher, and is only ever held briefly. Lock order:
        # ``_write`` before ``_state``.
        self._write = threading.Lock()
        self._state = threading.Lock()
        self._tail: dict[int, _Entry] = {}
        self._postings: dict[str, dict[int, int]] = {}
        self._tail_tokens = 0
        self._hidden: dict[int, _Op] = {}  # deleted labels whose delete is not committed yet
        # Tail labels that may also have an older document on disk (a replayed or repeated
        # add): excluded from disk results. Fresh labels, the usual case, need no exclusion,
        # which keeps the disk query as cheap as with an empty tail.
        self._shadowed: set[int] = set()
        self._ops: list[_Op] = []
        self._in_flight = 0  # operations taken by a commit that has not finished
        self._first_op_at = 0.0
        self._flushed_seq = self._last_seq  # highest seq committed, even while a purge caps it
        self._seq_cap: int | None = None
        # The searcher of the last commit and its statistics are swapped together with the
        # tail's release of the documents that commit holds, so a search sees each document
        # exactly once and scores the tail with the statistics of the disk it searches.
        self._searcher = self._index.searcher()
        self._stats = _disk_stats(self._searcher)
        # The seq the searcher's commit covers: with the tail, it decides every score (the
        # tail is scored with the disk's statistics), so a recall records it for its replay.
        self._visible_seq = self._last_seq
        self._searched = threading.local()  # per thread: the seq its last search saw
        self._closed = False
        self.last_commit_error: Exception | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        # Dropping the object without ``close`` behaves like a crash: the tail is lost, the
        # lock is released and the committer stops. The thread holds only a weak reference.
        self._finalizer = weakref.finalize(self, _abandon, self._lock_fd, self._stop, self._wake)
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(
                target=_commit_loop,
                args=(weakref.ref(self), self._stop, self._wake),
                name="mnemolog-fulltext-commit",
                daemon=True,
            )
            self._thread.start()

    # -- reading -------------------------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        """The log seq up to which every operation is committed to disk: replay after it."""
        return self._last_seq

    @property
    def visible_seq(self) -> int:
        """The log seq the committed index searched now covers; later documents are in the
        tail."""
        with self._state:
            return self._visible_seq

    def searched_seq(self) -> int | None:
        """``visible_seq`` as the calling thread's last ``search`` saw it (None: no search)."""
        seq = getattr(self._searched, "seq", None)
        return seq if isinstance(seq, int) else None

    def forget_searched_seq(self) -> None:
        self._searched.seq = None

    @property
    def pending(self) -> int:
        """Operations accepted but not yet committed to disk (queued or being committed)."""
        with self._state:
            return len(self._ops) + self._in_flight

    def search(
        self, query: str, k: int, *, container: str | None = None
    ) -> list[tuple[int, float]]:
        """The ``k`` best labels for ``query`` by BM25, as ``(label, score)``, best first.

        Any text is a valid query: it is split into terms with the index's tokenizer and the
        terms are OR-ed; a query without terms returns ``[]``. ``container`` restricts the
        result to one container without changing scores. Uncommitted writes are included and
        labels deleted since are excluded.
        """
        if k <= 0:
            return []
        terms = query_terms(query)
        if not terms:
            return []
        wanted = None if container is None else _clean(container)
        with self._state:
            self._check_open()
            searcher = self._searcher
            self._searched.seq = self._visible_seq
            excluded = list(self._hidden.keys() | self._shadowed)
            found = self._score_tail(searcher, terms, wanted)
        for label, score in _search_disk(searcher, terms, wanted, excluded, k):
            found.setdefault(label, score)
        return heapq.nsmallest(k, found.items(), key=lambda hit: (-hit[1], hit[0]))

    def _score_tail(
        self, searcher: tantivy.Searcher, terms: list[str], container: str | None
    ) -> dict[int, float]:
        """BM25 of the tail documents matching ``terms``, with the disk index's statistics.

        Caller holds ``_state``; ``searcher`` and ``_stats`` belong to the same commit.
        """
        if not self._tail:
            return {}
        on_disk = self._stats.docs > 0 and self._stats.tokens > 0
        if on_disk:
            docs, average = self._stats.docs, self._stats.tokens / self._stats.docs
        else:
            docs, average = len(self._tail), self._tail_tokens / len(self._tail) or 1.0
        scores: dict[int, float] = {}
        for term in terms:
            postings = self._postings.get(term)
            if not postings:
                continue
            df = searcher.doc_freq(_TEXT, term) if on_disk else len(postings)
            idf = math.log(1.0 + (max(docs, df) - df + 0.5) / (df + 0.5))
            for label, tf in postings.items():
                entry = self._tail[label]
                if container is not None and entry.container != container:
                    continue
                norm = K1 * (1.0 - B + B * entry.length / average)
                scores[label] = scores.get(label, 0.0) + idf * (K1 + 1.0) * tf / (tf + norm)
        return scores

    # -- writing -------------------------------------------------------------------------------

    def add(self, docs: Iterable[TextDoc | tuple[int, str, str]], *, seq: int | None) -> None:
        """Index ``docs`` (replacing any document with the same label); searchable at once.

        ``seq`` is the log position of the event these documents come from; once they are
        committed, ``last_seq`` reaches it. ``None`` leaves ``last_seq`` alone.
        """
        entries = [_entry(label, container, text) for label, container, text in docs]
        with self._state:
            self._check_open()
            disk = self._searcher if self._stats.docs else None
            for n, entry in enumerate(entries, start=1):
                # An earlier version of this label may be on disk, or on its way there.
                shadows = entry.label in self._tail or (
                    disk is not None and disk.doc_freq(_LABEL, entry.label) > 0
                )
                self._drop_from_tail(entry.label)
                if shadows:
                    self._shadowed.add(entry.label)
                self._tail[entry.label] = entry
                for term, tf in entry.terms.items():
                    self._postings.setdefault(term, {})[entry.label] = tf
                self._tail_tokens += entry.tokens
                self._queue(_Op(entry.label, entry, seq if n == len(entries) else None))
            if not entries and seq is not None:
                self._queue(_Op(None, None, seq))

    def delete(self, labels: Iterable[int], *, seq: int | None) -> None:
        """Remove ``labels``: hidden from searches at once, from the disk index at the commit.

        The text stays in tantivy's segment files until they merge; erasure needs ``purge``.
        """
        with self._state:
            self._check_open()
            targets = list(labels)
            for n, label in enumerate(targets, start=1):
                self._drop_from_tail(label)
                op = _Op(label, None, seq if n == len(targets) else None)
                self._hidden[label] = op
                self._queue(op)
            if not targets and seq is not None:
                self._queue(_Op(None, None, seq))

    def advance(self, seq: int) -> None:
        """Record that the log is applied up to ``seq`` although nothing here changed."""
        with self._state:
            self._check_open()
            self._queue(_Op(None, None, seq))

    def purge(self, labels: Iterable[int], *, seq: int | None) -> None:
        """Delete ``labels`` and rewrite the index so no file under the directory holds them.

        Costs a full rebuild of the on-disk index (0.65 s for 100k short documents in
        ``bench/indexes.py``); searches and writes go on meanwhile. ``last_seq`` reaches ``seq``
        only once the old files are gone.
        """
        labels = list(labels)
        with self._write:
            with self._state:
                if seq is not None:
                    self._seq_cap = seq - 1
            try:
                self.delete(labels, seq=seq)
                self._flush()
                self._rebuild_from_disk()
            finally:
                with self._state:
                    self._seq_cap = None
            self._record_seq(self._flushed_seq)

    # -- committing ----------------------------------------------------------------------------

    def commit(self) -> None:
        """Commit every queued operation to disk now, then record ``last_seq``."""
        with self._write:
            self._flush()

    def commit_through(self, seq: int) -> None:
        """Commit the queued operations up to log seq ``seq`` and leave later ones queued: a
        replay puts the disk/tail boundary where a recorded search had it."""
        with self._write:
            self._flush(through=seq)

    def commit_if_due(self) -> bool:
        """Commit if ``commit_docs`` operations wait or the oldest waited ``commit_interval``."""
        if self._seconds_until_due() > 0:
            return False
        self.commit()
        return True

    def close(self) -> None:
        """Stop the committer, commit what waits and release the directory. Idempotent."""
        if self._closed:
            return
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        with self._write:
            if self._closed:  # closed meanwhile by another thread
                return
            self._flush()
            with self._state:
                self._closed = True
            self._writer.wait_merging_threads()
        self._finalizer()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"full-text index {self.directory} is closed")

    def _queue(self, op: _Op) -> None:
        """Append ``op``; caller holds ``_state``."""
        if not self._ops:
            self._first_op_at = time.monotonic()
        self._ops.append(op)
        if len(self._ops) >= self._commit_docs:
            self._wake.set()

    def _drop_from_tail(self, label: int) -> None:
        """Forget the tail document ``label``, if any; caller holds ``_state``."""
        entry = self._tail.pop(label, None)
        if entry is None:
            return
        self._shadowed.discard(label)
        for term in entry.terms:
            postings = self._postings[term]
            del postings[label]
            if not postings:
                del self._postings[term]
        self._tail_tokens -= entry.tokens

    def _seconds_until_due(self) -> float:
        with self._state:
            if not self._ops:
                return self._commit_interval
            if len(self._ops) >= self._commit_docs:
                return 0.0
            return max(0.0, self._first_op_at + self._commit_interval - time.monotonic())

    def _flush(self, through: int | None = None) -> None:
        """Write the queued operations (those up to seq ``through``, if given) to tantivy and
        commit; caller holds ``_write``."""
        with self._state:
            cut = len(self._ops)
            if through is not None:
                cut = max(
                    (
                        n
                        for n, op in enumerate(self._ops, 1)
                        if op.seq is not None and op.seq <= through
                    ),
                    default=0,
                )
            ops, self._ops = self._ops[:cut], self._ops[cut:]
            self._in_flight = len(ops)
        if not ops:
            return
        seqs = [op.seq for op in ops if op.seq is not None]
        changes = [op for op in ops if op.label is not None]
        if changes:
            writer = self._writer
            try:
                for op in changes:
                    writer.delete_documents_by_term(_LABEL, op.label)
                    if op.entry is not None:
                        writer.add_document(
                            tantivy.Document(
                                label=op.entry.label,
                                container=op.entry.container,
                                text=op.entry.text,
                            )
                        )
                writer.commit()
            except Exception as error:
                # Undo what the writer holds, put the batch back in front, keep the tail:
                # searches still see the writes, and the next commit retries them.
                with contextlib.suppress(Exception):
                    writer.rollback()
                with self._state:
                    self._ops = ops + self._ops
                    self._in_flight = 0
                    self._first_op_at = time.monotonic()
                self.last_commit_error = error
                raise
        try:
            if changes:
                self._index.reload()
                searcher = self._index.searcher()
                stats = _disk_stats(searcher)
                with self._state:
                    # The tail lets go of these documents as searches start seeing them on disk.
                    for op in changes:
                        assert op.label is not None
                        if op.entry is not None:
                            if self._tail.get(op.label) is op.entry:
                                self._drop_from_tail(op.label)
                        elif self._hidden.get(op.label) is op:
                            del self._hidden[op.label]
                    self._searcher, self._stats = searcher, stats
                    self._visible_seq = max(self._visible_seq, *seqs, 0)
            else:
                with self._state:
                    self._visible_seq = max(self._visible_seq, *seqs, 0)
            self.last_commit_error = None
            if seqs:
                self._flushed_seq = max(self._flushed_seq, *seqs)
            self._record_seq(self._flushed_seq)
        finally:
            with self._state:
                self._in_flight = 0

    def _record_seq(self, seq: int) -> None:
        """Persist ``seq`` as ``last_seq`` (capped while a purge runs); caller holds ``_write``."""
        with self._state:
            cap = self._seq_cap
        if cap is not None:
            seq = min(seq, cap)
        if seq > self._last_seq:
            _write_sidecar(self.directory, seq)
            self._last_seq = seq

    def _rebuild_from_disk(self) -> None:
        """Copy the live documents into a fresh index and swap it in; caller holds ``_write``."""
        root = self.directory
        fresh_path = root / NEW_DIR
        shutil.rmtree(fresh_path, ignore_errors=True)
        fresh_path.mkdir()
        fresh = _index_at(fresh_path, reuse=False)
        fresh_writer = fresh.writer(heap_size=self._heap_size, num_threads=1)
        searcher = self._index.searcher()
        if searcher.num_docs:
            for _, address in searcher.search(Query.all_query(), searcher.num_docs).hits:
                stored = searcher.doc(address)
                fresh_writer.add_document(
                    tantivy.Document(
                        label=stored.get_first(_LABEL),
                        container=stored.get_first(_CONTAINER),
                        text=stored.get_first(_TEXT),
                    )
                )
        fresh_writer.commit()
        fresh_writer.wait_merging_threads()
        del fresh, fresh_writer, searcher
        fsync_tree(fresh_path)
        # The old writer must let go of its directory before the swap.
        self._writer.wait_merging_threads()
        os.rename(root / INDEX_DIR, root / OLD_DIR)
        os.rename(fresh_path, root / INDEX_DIR)
        fsync_path(root)
        index, _ = _open_index(root / INDEX_DIR)
        self._writer = _open_writer(index, self._heap_size)
        searcher = index.searcher()
        stats = _disk_stats(searcher)
        with self._state:
            self._index = index
            self._searcher, self._stats = searcher, stats
        shutil.rmtree(root / OLD_DIR)
        fsync_path(root)


def _entry(label: int, container: str, text: str) -> _Entry:
    if not 0 <= label < 2**63:
        raise ValueError(f"label {label} is not an i64 row id")
    text = _clean(text)
    tokens = _ANALYZER.analyze(text)
    return _Entry(
        label=label,
        container=_clean(container),
        text=text,
        terms=dict(Counter(tokens)),
        tokens=len(tokens),
        length=_quantised_length(len(tokens)),
    )


def _search_disk(
    searcher: tantivy.Searcher,
    terms: list[str],
    container: str | None,
    excluded: list[int],
    k: int,
) -> list[tuple[int, float]]:
    """Top ``k`` committed documents for ``terms``, leaving out ``excluded`` labels."""
    if searcher.num_docs == 0:
        return []
    matches = Query.boolean_query(
        [(Occur.Should, Query.term_query(_SCHEMA, _TEXT, term)) for term in terms]
    )
    clauses: list[tuple[Occur, Query]] = [(Occur.Must, matches)]
    if container is not None:
        # A zero constant score filters without adding to the BM25 sum.
        only = Query.term_query(_SCHEMA, _CONTAINER, container)
        clauses.append((Occur.Must, Query.const_score_query(only, 0.0)))
    if excluded:
        clauses.append((Occur.MustNot, Query.term_set_query(_SCHEMA, _LABEL, excluded)))
    # tantivy sizes its top-k heap by the limit: never ask for more than there are documents.
    hits = searcher.search(Query.boolean_query(clauses), min(k, searcher.num_docs)).hits
    if not hits:
        return []
    labels = searcher.fast_field_values(_LABEL, [address for _, address in hits])
    return [
        (int(label), float(score))
        for (score, _), label in zip(hits, labels, strict=True)
        if isinstance(label, int)
    ]


def _disk_stats(searcher: tantivy.Searcher) -> _DiskStats:
    """Document count and token total tantivy's BM25 uses, read from an explanation.

    tantivy counts deleted documents until a merge, in the document count and in document
    frequencies alike; the bindings expose neither that count nor the token total, but the
    explanation of a term's score on any document states both.
    """
    if searcher.num_docs == 0:
        return _DiskStats(docs=0, tokens=0.0)
    for _, address in searcher.search(Query.all_query(), 8).hits:
        text = searcher.doc(address).get_first(_TEXT)
        tokens = _ANALYZER.analyze(text) if isinstance(text, str) else []
        if not tokens:
            continue
        explained = Query.term_query(_SCHEMA, _TEXT, tokens[0]).explain(searcher, address)
        values = _explained_values(json.loads(explained.to_json()))
        docs, average = values.get("N"), values.get("avgdl")
        if docs is not None and average is not None:
            return _DiskStats(docs=int(docs), tokens=docs * average)
    return _DiskStats(docs=searcher.num_docs, tokens=0.0)


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


def _commit_loop(
    ref: weakref.ReferenceType[FullTextIndex], stop: threading.Event, wake: threading.Event
) -> None:
    """The background committer: sleep until a commit is due, commit, repeat."""
    while not stop.is_set():
        index = ref()
        if index is None:
            return
        delay = index._seconds_until_due()
        del index
        if delay > 0:
            wake.wait(delay)
            wake.clear()
        if stop.is_set():
            return
        index = ref()
        if index is None:
            return
        try:
            index.commit_if_due()
        except Exception:
            # The batch stays queued and the error is in ``last_commit_error``; back off
            # rather than spin, then retry.
            interval = index._commit_interval
            del index
            stop.wait(interval)
            continue
        del index


def _abandon(lock_fd: int, stop: threading.Event, wake: threading.Event) -> None:
    stop.set()
    wake.set()
    with contextlib.suppress(OSError):
        os.close(lock_fd)


def _acquire_lock(root: Path) -> int:
    """Hold an exclusive flock on ``root/writer.lock`` (per open file: also within a process)."""
    fd = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise DataDirLocked(
            f"the full-text index in {root} is already open for writing (LockBusy)"
        ) from None
    return fd


def _open_index(path: Path) -> tuple[tantivy.Index, bool]:
    """Open (or create) the index at ``path``; a damaged or foreign one is wiped.

    Returns the index and whether it was reset, in which case the log must be replayed from 0.
    """
    path.mkdir(exist_ok=True)
    reset = False
    try:
        index = _index_at(path, reuse=True)
    except ValueError:
        shutil.rmtree(path)
        path.mkdir()
        index = _index_at(path, reuse=False)
        reset = True
    # Reload explicitly after each commit; a file watcher would race the purge's swap.
    index.config_reader(reload_policy="manual")
    return index, reset


def _index_at(path: Path, *, reuse: bool) -> tantivy.Index:
    index = tantivy.Index(_SCHEMA, path=str(path), reuse=reuse)
    index.register_tokenizer(TOKENIZER, _ANALYZER)
    return index


def _open_writer(index: tantivy.Index, heap_size: int) -> tantivy.IndexWriter:
    try:
        return index.writer(heap_size=heap_size, num_threads=1)
    except ValueError as error:
        if "LockBusy" in str(error):
            raise DataDirLocked(
                f"the full-text index is already open for writing: {error}"
            ) from None
        raise


def _finish_interrupted_purge(root: Path) -> None:
    """Complete or undo a purge that a crash cut short (see ``_rebuild_from_disk``)."""
    current, fresh, old = root / INDEX_DIR, root / NEW_DIR, root / OLD_DIR
    if old.exists():
        if not current.exists():
            # Crashed between the two renames: the fresh index is complete.
            os.rename(fresh, current)
        shutil.rmtree(old)
    # A fresh index left beside the current one was not finished; the purge will be replayed.
    shutil.rmtree(fresh, ignore_errors=True)
    fsync_path(root)


def _read_sidecar(root: Path) -> int | None:
    """``last_seq`` from the sidecar; 0 (replay everything, harmless) if it is unreadable, and
    None if it belongs to an index of another format."""
    try:
        sidecar = msgspec.json.decode((root / SIDECAR).read_bytes(), type=_Sidecar)
    except (OSError, msgspec.DecodeError):
        return 0
    return sidecar.last_seq if sidecar.format == FORMAT else None


def _write_sidecar(root: Path, last_seq: int) -> None:
    path = root / SIDECAR
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as file:
        file.write(msgspec.json.encode(_Sidecar(format=FORMAT, last_seq=last_seq)))
        file.flush()
        os.fsync(file.fileno())
    os.replace(tmp, path)
