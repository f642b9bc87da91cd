"""The full-text index's shards: one tantivy index per container, each with its own tail.

Why one index per container rather than one filtered index: BM25 scores a document with corpus
statistics (document count, document frequencies, average length). In one shared index those
are every container's, so one user's scores moved with every other user's writes, and erasing
one user's text changed the scores every other user's recorded recalls were ranked by: none of
them could be replayed exactly afterwards. A shard's statistics are its container's alone, so
a container's ranking depends on its own data only (and no container's words show through
another's scores). A search across containers merges the shards' lists: their scores come
from different statistics, as a search across several stores' indexes would.

A shard lives under ``shards/<key>/``, ``key`` a digest of the container tag, with the same
layout as a lone index (``index/``, and ``index.new/``, ``index.old/`` only during a purge). A
writer is opened per commit and closed after it, merges included, so no writer, thread or heap
is held for a container between commits.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import tantivy
from tantivy import Query

from ...fsync import fsync_path
from .analysis import clean
from .disk import (
    INDEX_DIR,
    LABEL,
    SCHEMA,
    finish_interrupted_purge,
    open_index,
    open_writer,
)
from .tail import DiskStats, Entry, Tail, disk_stats

__all__ = ["SHARDS_DIR", "Shard", "locate", "open_shards", "shard_key"]

SHARDS_DIR = "shards"


def shard_key(container: str) -> str:
    """The directory name of a (cleaned) container's shard."""
    return hashlib.sha256(container.encode("utf-8")).hexdigest()[:32]


class Shard:
    """One container's tantivy index, the searcher of its last commit with that commit's
    statistics, and its uncommitted documents. The owner locks."""

    __slots__ = ("index", "path", "reset", "searcher", "stats", "tail")

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        finish_interrupted_purge(path)
        self.index, self.reset = open_index(path / INDEX_DIR)
        self.searcher: tantivy.Searcher = self.index.searcher()
        self.stats: DiskStats = disk_stats(self.searcher)
        self.tail = Tail()

    def commit(self, changes: Sequence[tuple[int, Entry | None]], heap_size: int) -> None:
        """Write ``changes`` (a label and its new document, or None to delete it) and commit,
        merges included; the owner serialises commits."""
        writer = open_writer(self.index, heap_size)
        try:
            for label, entry in changes:
                writer.delete_documents_by_term(LABEL, label)
                if entry is not None:
                    writer.add_document(
                        tantivy.Document(
                            label=entry.label, container=entry.container, text=entry.text
                        )
                    )
            writer.commit()
        except Exception:
            with contextlib.suppress(Exception):
                writer.rollback()
            raise
        finally:
            # Let go of the directory (and its lock) now: no writer is held between commits.
            writer.wait_merging_threads()

    def reopen(self) -> tuple[tantivy.Index, tantivy.Searcher, DiskStats]:
        """The index as now on disk: a fresh searcher and its statistics, to be swapped in."""
        index, _ = open_index(self.path / INDEX_DIR)
        searcher = index.searcher()
        return index, searcher, disk_stats(searcher)

    def refreshed(self) -> tuple[tantivy.Searcher, DiskStats]:
        """The searcher of the commit just made, and its statistics."""
        self.index.reload()
        searcher = self.index.searcher()
        return searcher, disk_stats(searcher)

    def remove(self) -> None:
        """Delete the shard's directory (it holds no document)."""
        shutil.rmtree(self.path, ignore_errors=True)
        fsync_path(self.path.parent)


def open_shards(root: Path) -> tuple[dict[str, Shard], bool]:
    """Every shard under ``root``, by key, and whether any was damaged and wiped (the log must
    then be replayed from 0)."""
    base = root / SHARDS_DIR
    base.mkdir(exist_ok=True)
    shards: dict[str, Shard] = {}
    reset = False
    for path in sorted(p for p in base.iterdir() if p.is_dir()):
        shard = Shard(path)
        reset = reset or shard.reset
        shards[path.name] = shard
    return shards, reset


def locate(
    shards: Mapping[str, Shard], labels: Sequence[int], container: str | None
) -> dict[int, str]:
    """The shard key of each of ``labels`` that a shard holds, on disk or in its tail; the
    shard of ``container`` is looked in first."""
    order = list(shards.items())
    if container is not None:
        first = shard_key(clean(container))
        order.sort(key=lambda item: item[0] != first)
    located: dict[int, str] = {}
    for key, shard in order:
        wanted = [label for label in labels if label not in located]
        if not wanted:
            break
        for label in wanted:
            if label in shard.tail:
                located[label] = key
        if shard.searcher.num_docs:
            hits = shard.searcher.search(Query.term_set_query(SCHEMA, LABEL, wanted), len(wanted))
            addresses = [address for _, address in hits.hits]
            for held in shard.searcher.fast_field_values(LABEL, addresses):
                if isinstance(held, int):
                    located.setdefault(held, key)
    return located
