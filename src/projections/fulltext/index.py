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

Each container has an index and a tail of its own, a *shard*, so its BM25 statistics are
its own (why: ``fulltext_shards``). The tail and its scoring, including why tantivy's BM25 is
rewritten for it, are in ``fulltext_tail``; the terms come from ``analysis``; the directory's
layout, schema, lock and sidecar are in ``fulltext_disk``.

Deletes hide a label at once: until the delete is committed, the label is excluded from the
disk query. Adds are upserts (delete by label, then add), so replaying a write is harmless.

Durability and recovery: ``last_seq``, the log position up to which every operation is
committed, is written to a sidecar (``fulltext.json``) after each commit. A crash loses only the
uncommitted tail; the owner replays the log from ``last_seq``. A crash between a commit and its
sidecar replays a few operations twice, which the upserts absorb.

Erasure: tantivy keeps deleted documents in its segment files until a merge, and the bindings
cannot force a merge, so ``purge`` rebuilds each shard it touches from its surviving documents
(their text is stored for that reason) in a fresh directory and swaps it in; a shard left with
no document is removed. Other containers' shards are not touched, nor are their statistics.
The purge's own seq reaches the sidecar only after the swap, so a crash mid-purge replays it.

One writer per directory: a second ``FullTextIndex`` on the same directory, in this process or
another, raises ``DataDirLocked``.
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import os
import shutil
import threading
import time
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import NamedTuple, Self

from ...fsync import fsync_path
from .analysis import clean, query_terms
from .disk import (
    INDEX_DIR,
    LABEL,
    NEW_DIR,
    OLD_DIR,
    TEXT,
    acquire_lock,
    read_sidecar,
    search_disk,
    write_live_copy,
    write_sidecar,
)
from .shards import SHARDS_DIR, Shard, locate, open_shards, shard_key
from .tail import Entry, make_entry

__all__ = ["FullTextIndex", "TextDoc"]

log = logging.getLogger(__name__)

DEFAULT_COMMIT_INTERVAL = 0.5  # seconds a write may wait in the tail before its commit
DEFAULT_COMMIT_DOCS = 1000  # operations that trigger a commit without waiting
WRITER_HEAP = 50_000_000  # tantivy needs at least 15 MB per indexing thread


class TextDoc(NamedTuple):
    """One document to index: a memory version's row id, its container and its text."""

    label: int
    container: str
    text: str


@dataclass(frozen=True, slots=True, eq=False)
class _Op:
    """A queued change: an upsert (``entry``), a delete (``label`` only) or just a seq;
    ``shard`` is the key of the shard a change goes to."""

    label: int | None
    entry: Entry | None
    seq: int | None
    shard: str = ""


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
        self._lock_fd = acquire_lock(self.directory)
        try:
            last_seq = read_sidecar(self.directory)
            if last_seq is None:  # an index of another format (one index for every container,
                # or analysed otherwise): rebuild it
                log.warning(
                    "the full-text index in %s has another format: it is rebuilt from the log",
                    self.directory,
                )
                for old in (INDEX_DIR, NEW_DIR, OLD_DIR, SHARDS_DIR):
                    shutil.rmtree(self.directory / old, ignore_errors=True)
            self._last_seq = last_seq or 0
            self._shards, reset = open_shards(self.directory)
            if reset:
                # A damaged shard was wiped: every shard is rebuilt from the log, and before
                # anything else, so a crash now cannot leave the old seq beside them.
                shutil.rmtree(self.directory / SHARDS_DIR)
                self._shards, _ = open_shards(self.directory)
                write_sidecar(self.directory, 0)
                self._last_seq = 0
        except BaseException:
            os.close(self._lock_fd)
            raise
        # ``_write`` serialises use of the tantivy writers (commits, purges); ``_state`` guards
        # the shards (their tails and searchers) and the queue, and is only ever held briefly.
        # Lock order: ``_write`` before ``_state``.
        self._write = threading.Lock()
        self._state = threading.Lock()
        self._hidden: dict[int, _Op] = {}  # deleted labels whose delete is not committed yet
        self._ops: list[_Op] = []
        self._in_flight = 0  # operations taken by a commit that has not finished
        self._first_op_at = 0.0
        self._flushed_seq = self._last_seq  # highest seq committed, even while a purge caps it
        self._seq_cap: int | None = None
        # A shard's searcher of the last commit and its statistics are swapped together with
        # its tail's release of the documents that commit holds, so a search sees each
        # document exactly once and scores the tail with the statistics of the disk it
        # searches.
        # The seq the shards' commit covers: with the tails, it decides every score (a tail is
        # scored with its shard's statistics), so a recall records it for its replay.
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
        return self._search_terms(query_terms(query), k, container)

    def search_rare(
        self, query: str, k: int, *, count: int, container: str | None = None
    ) -> list[tuple[int, float]]:
        """Up to ``k`` documents holding the ``count`` terms of ``query`` that the fewest stored
        documents (of ``container``, if given) hold, terms no document holds left out, those
        of the rarest first, each term's by its BM25: the documents that name what ``query``
        names, when its common words would rank many others above them."""
        terms = query_terms(query)
        if not terms:
            return []
        with self._state:
            self._check_open()
            shards = self._searched_shards(container)
            held = [
                (
                    sum(
                        s.searcher.doc_freq(TEXT, t) + len(s.tail.postings.get(t, ()))
                        for s in shards
                    ),
                    t,
                )
                for t in terms
            ]
        found: dict[int, float] = {}
        for _, term in sorted(h for h in held if h[0] > 0)[:count]:
            for label, score in self._search_terms([term], k, container):
                found.setdefault(label, score)
        return list(found.items())[:k]

    def _search_terms(
        self, terms: list[str], k: int, container: str | None
    ) -> list[tuple[int, float]]:
        if k <= 0 or not terms:
            return []
        with self._state:
            self._check_open()
            self._searched.seq = self._visible_seq
            hidden = self._hidden.keys()
            found: dict[int, float] = {}
            disks = []
            for shard in self._searched_shards(container):
                # A tail is scored with its shard's statistics: ``searcher`` and ``stats``
                # belong to the same commit.
                found.update(shard.tail.score(shard.searcher, shard.stats, terms, None))
                disks.append((shard.searcher, list(hidden | shard.tail.shadowed)))
        for searcher, excluded in disks:
            for label, score in search_disk(searcher, terms, None, excluded, k):
                found.setdefault(label, score)
        return heapq.nsmallest(k, found.items(), key=lambda hit: (-hit[1], hit[0]))

    def _searched_shards(self, container: str | None) -> list[Shard]:
        """The shard of ``container``, or every shard; caller holds ``_state``."""
        if container is None:
            return list(self._shards.values())
        shard = self._shards.get(shard_key(clean(container)))
        return [] if shard is None else [shard]

    def _shard(self, container: str) -> Shard:
        """The shard of a cleaned ``container``, made if it has none; caller holds ``_state``."""
        key = shard_key(container)
        shard = self._shards.get(key)
        if shard is None:
            shard = self._shards[key] = Shard(self.directory / SHARDS_DIR / key)
        return shard

    # -- writing -------------------------------------------------------------------------------

    def add(self, docs: Iterable[TextDoc | tuple[int, str, str]], *, seq: int | None) -> None:
        """Index ``docs`` (replacing any document with the same label); searchable at once.

        ``seq`` is the log position of the event these documents come from; once they are
        committed, ``last_seq`` reaches it. ``None`` leaves ``last_seq`` alone.
        """
        entries = [make_entry(label, container, text) for label, container, text in docs]
        with self._state:
            self._check_open()
            for n, entry in enumerate(entries, start=1):
                shard = self._shard(entry.container)
                # An earlier version of this label may be on disk, or on its way there.
                shadows = entry.label in shard.tail or (
                    shard.stats.docs > 0 and shard.searcher.doc_freq(LABEL, entry.label) > 0
                )
                shard.tail.put(entry, shadows=shadows)
                last = seq if n == len(entries) else None
                self._queue(_Op(entry.label, entry, last, shard_key(entry.container)))
            if not entries and seq is not None:
                self._queue(_Op(None, None, seq))

    def delete(
        self, labels: Iterable[int], *, seq: int | None, container: str | None = None
    ) -> dict[int, str]:
        """Remove ``labels`` (of ``container``, if known; else looked for in every shard):
        hidden from searches at once, from the disk index at the commit. Returns the shard key
        of each label a shard held.

        The text stays in tantivy's segment files until they merge; erasure needs ``purge``.
        """
        targets = list(labels)
        with self._state:
            self._check_open()
            located = locate(self._shards, targets, container)
            for n, label in enumerate(targets, start=1):
                key = located.get(label)
                if key is not None:
                    self._shards[key].tail.drop(label)
                op = _Op(label, None, seq if n == len(targets) else None, key or "")
                if key is not None:
                    self._hidden[label] = op
                    self._queue(op)
                elif op.seq is not None:
                    self._queue(_Op(None, None, op.seq))
            if not targets and seq is not None:
                self._queue(_Op(None, None, seq))
            return located

    def advance(self, seq: int) -> None:
        """Record that the log is applied up to ``seq`` although nothing here changed."""
        with self._state:
            self._check_open()
            self._queue(_Op(None, None, seq))

    def purge(
        self, labels: Iterable[int], *, seq: int | None, container: str | None = None
    ) -> None:
        """Delete ``labels`` (of ``container``, if known) and rewrite each shard that held any
        so no file under the directory holds them; a shard left empty is removed.

        Costs a rebuild of those shards (0.65 s for 100k short documents in
        ``bench/indexes.py``); searches and writes go on meanwhile. ``last_seq`` reaches ``seq``
        only once the old files are gone.
        """
        labels = list(labels)
        with self._write:
            with self._state:
                if seq is not None:
                    self._seq_cap = seq - 1
            try:
                located = self.delete(labels, seq=seq, container=container)
                touched = set(located.values())
                if len(located) < len(set(labels)):
                    with self._state:
                        # A label no shard serves may linger, deleted, in its shard's segment
                        # files: such a shard counts more documents than it serves.
                        if container is not None and shard_key(clean(container)) in self._shards:
                            touched.add(shard_key(clean(container)))
                        touched.update(
                            key
                            for key, shard in self._shards.items()
                            if shard.stats.docs > shard.searcher.num_docs
                        )
                self._flush()
                for key in sorted(touched):
                    self._rebuild_from_disk(key)
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
        by_shard: dict[str, list[_Op]] = {}
        for op in changes:
            by_shard.setdefault(op.shard, []).append(op)
        with self._state:
            shards = {key: self._shards[key] for key in by_shard}
        try:
            for key, shard_ops in by_shard.items():
                shards[key].commit(
                    [(op.label, op.entry) for op in shard_ops if op.label is not None],
                    self._heap_size,
                )
        except Exception as error:
            # Put the batch back in front and keep the tails: searches still see the writes,
            # and the next commit retries them (upserts and deletes by label, so a shard that
            # did commit takes them again harmlessly).
            with self._state:
                self._ops = ops + self._ops
                self._in_flight = 0
                self._first_op_at = time.monotonic()
            self.last_commit_error = error
            raise
        try:
            fresh = {key: shard.refreshed() for key, shard in shards.items()}
            with self._state:
                # Each tail lets go of these documents as searches start seeing them on disk.
                for op in changes:
                    assert op.label is not None
                    if op.entry is not None:
                        tail = shards[op.shard].tail
                        if tail.get(op.label) is op.entry:
                            tail.drop(op.label)
                    elif self._hidden.get(op.label) is op:
                        del self._hidden[op.label]
                for key, (searcher, stats) in fresh.items():
                    shards[key].searcher, shards[key].stats = searcher, stats
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
            write_sidecar(self.directory, seq)
            self._last_seq = seq

    def _rebuild_from_disk(self, key: str) -> None:
        """Copy the live documents of shard ``key`` into a fresh index and swap it in, or
        remove the shard if it holds none; caller holds ``_write``."""
        with self._state:
            shard = self._shards[key]
        root = shard.path
        if shard.searcher.num_docs == 0:  # the deletes are committed: nothing survives on disk
            with self._state:
                if not shard.tail.entries:
                    del self._shards[key]
                    shard.remove()
                    return
        fresh_path = root / NEW_DIR
        write_live_copy(shard.index, fresh_path, self._heap_size)
        os.rename(root / INDEX_DIR, root / OLD_DIR)
        os.rename(fresh_path, root / INDEX_DIR)
        fsync_path(root)
        index, searcher, stats = shard.reopen()
        with self._state:
            shard.index = index
            shard.searcher, shard.stats = searcher, stats
        shutil.rmtree(root / OLD_DIR)
        fsync_path(root)


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
