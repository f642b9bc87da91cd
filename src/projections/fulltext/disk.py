"""The full-text index's directory on disk: its layout, schema, lock, sidecar and tantivy index.

Layout::

    <directory>/writer.lock    flock held while open
    <directory>/fulltext.json  {"format": 3, "last_seq": n}; another format: rebuilt from the log
    <directory>/shards/<key>/index/
                               one container's tantivy index (``fulltext_shards``); index.new/,
                               index.old/ beside it only during a purge
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

import msgspec
import tantivy
from tantivy import Occur, Query

from ...errors import DataDirLocked
from ...fsync import fsync_path, fsync_tree
from .analysis import ANALYZER, TOKENIZER

__all__ = [
    "CONTAINER",
    "FORMAT",
    "INDEX_DIR",
    "LABEL",
    "LOCK_FILE",
    "NEW_DIR",
    "OLD_DIR",
    "SCHEMA",
    "SIDECAR",
    "TEXT",
    "acquire_lock",
    "finish_interrupted_purge",
    "index_at",
    "open_index",
    "open_writer",
    "read_sidecar",
    "search_disk",
    "write_live_copy",
    "write_sidecar",
]

# 2: the text field is analysed by ``analysis.ANALYZER`` (stop words, stemming); 3: one index
# per container
FORMAT = 3
INDEX_DIR = "index"
NEW_DIR = "index.new"
OLD_DIR = "index.old"
SIDECAR = "fulltext.json"
LOCK_FILE = "writer.lock"

LABEL = "label"
CONTAINER = "container"
TEXT = "text"


def _build_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_integer_field(LABEL, stored=True, indexed=True, fast=True)  # i64
    builder.add_text_field(CONTAINER, stored=True, tokenizer_name="raw")
    # stored so ``purge`` can rebuild without it
    builder.add_text_field(TEXT, stored=True, tokenizer_name=TOKENIZER)
    return builder.build()


SCHEMA = _build_schema()


# Up to this many labels left out of a search are dropped from a longer list of hits rather than
# excluded by the query (which stops tantivy pruning).
FILTERED_AFTER = 256


class _Sidecar(msgspec.Struct, frozen=True, kw_only=True):
    format: int
    last_seq: int


def search_disk(
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
        [(Occur.Should, Query.term_query(SCHEMA, TEXT, term)) for term in terms]
    )
    few = len(excluded) <= FILTERED_AFTER
    if container is None and few:
        # A bare disjunction, asked for as many more as may be left out: tantivy prunes it
        # (block-max WAND), where a Must or MustNot around it scores every match (twice as
        # slow at 150k documents, and growing with them). The same hits: a score is the sum
        # of its terms' either way.
        query = matches
        limit = k + len(excluded)
    else:
        clauses: list[tuple[Occur, Query]] = [(Occur.Must, matches)]
        if container is not None:
            # A zero constant score filters without adding to the BM25 sum.
            only = Query.term_query(SCHEMA, CONTAINER, container)
            clauses.append((Occur.Must, Query.const_score_query(only, 0.0)))
        if excluded:
            clauses.append((Occur.MustNot, Query.term_set_query(SCHEMA, LABEL, excluded)))
        query = Query.boolean_query(clauses)
        limit = k
    left_out = set(excluded) if excluded and query is matches else set()
    # tantivy sizes its top-k heap by the limit: never ask for more than there are documents.
    limit = min(limit, searcher.num_docs)
    while True:
        hits = searcher.search(query, limit, count=False).hits
        if not hits:
            return []
        labels = searcher.fast_field_values(LABEL, [address for _, address in hits])
        found = [
            (int(label), float(score))
            for (score, _), label in zip(hits, labels, strict=True)
            if isinstance(label, int) and label not in left_out
        ]
        # tantivy breaks ties by document address, which depends on how the index was
        # committed and merged; a replay commits it otherwise. So a tie at the cut is taken
        # whole, and cut by label: the top ``k`` are then a function of the scores alone.
        if (
            len(hits) < limit
            or limit >= searcher.num_docs
            or len(found) < k
            or float(hits[-1][0]) < sorted(s for _, s in found)[-k]
        ):
            break
        limit = min(2 * limit, searcher.num_docs)
    found.sort(key=lambda hit: (-hit[1], hit[0]))
    return found[:k]


def acquire_lock(root: Path) -> int:
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


def open_index(path: Path) -> tuple[tantivy.Index, bool]:
    """Open (or create) the index at ``path``; a damaged or foreign one is wiped.

    Returns the index and whether it was reset, in which case the log must be replayed from 0.
    """
    path.mkdir(exist_ok=True)
    reset = False
    try:
        index = index_at(path, reuse=True)
    except ValueError:
        shutil.rmtree(path)
        path.mkdir()
        index = index_at(path, reuse=False)
        reset = True
    # Reload explicitly after each commit; a file watcher would race the purge's swap.
    index.config_reader(reload_policy="manual")
    return index, reset


def index_at(path: Path, *, reuse: bool) -> tantivy.Index:
    index = tantivy.Index(SCHEMA, path=str(path), reuse=reuse)
    index.register_tokenizer(TOKENIZER, ANALYZER)
    return index


def open_writer(index: tantivy.Index, heap_size: int) -> tantivy.IndexWriter:
    try:
        return index.writer(heap_size=heap_size, num_threads=1)
    except ValueError as error:
        if "LockBusy" in str(error):
            raise DataDirLocked(
                f"the full-text index is already open for writing: {error}"
            ) from None
        raise


def write_live_copy(index: tantivy.Index, fresh_path: Path, heap_size: int) -> None:
    """Copy the live documents of ``index`` into a fresh index at ``fresh_path``, synced."""
    shutil.rmtree(fresh_path, ignore_errors=True)
    fresh_path.mkdir()
    fresh = index_at(fresh_path, reuse=False)
    fresh_writer = fresh.writer(heap_size=heap_size, num_threads=1)
    searcher = index.searcher()
    if searcher.num_docs:
        for _, address in searcher.search(Query.all_query(), searcher.num_docs).hits:
            stored = searcher.doc(address)
            fresh_writer.add_document(
                tantivy.Document(
                    label=stored.get_first(LABEL),
                    container=stored.get_first(CONTAINER),
                    text=stored.get_first(TEXT),
                )
            )
    fresh_writer.commit()
    fresh_writer.wait_merging_threads()
    del fresh, fresh_writer, searcher
    fsync_tree(fresh_path)


def finish_interrupted_purge(root: Path) -> None:
    """Complete or undo a purge that a crash cut short in the shard at ``root`` (see
    ``FullTextIndex._rebuild_from_disk``)."""
    current, fresh, old = root / INDEX_DIR, root / NEW_DIR, root / OLD_DIR
    if old.exists():
        if not current.exists():
            # Crashed between the two renames: the fresh index is complete.
            os.rename(fresh, current)
        shutil.rmtree(old)
    # A fresh index left beside the current one was not finished; the purge will be replayed.
    shutil.rmtree(fresh, ignore_errors=True)
    fsync_path(root)


def read_sidecar(root: Path) -> int | None:
    """``last_seq`` from the sidecar; 0 (replay everything, harmless) if it is unreadable, and
    None if it belongs to an index of another format."""
    try:
        sidecar = msgspec.json.decode((root / SIDECAR).read_bytes(), type=_Sidecar)
    except (OSError, msgspec.DecodeError):
        return 0
    return sidecar.last_seq if sidecar.format == FORMAT else None


def write_sidecar(root: Path, last_seq: int) -> None:
    path = root / SIDECAR
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as file:
        file.write(msgspec.json.encode(_Sidecar(format=FORMAT, last_seq=last_seq)))
        file.flush()
        os.fsync(file.fileno())
    os.replace(tmp, path)
