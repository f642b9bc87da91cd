"""The vector and full-text indexes as projections over the log.

Two families are indexed: memory versions (label = the seq of the event that made the
version, as ``row_id`` in ``memories.sqlite3``; their contexts have a full-text index of their
own, under the same labels) and document chunks (label = seq times
``CHUNK_SLOTS`` plus the chunk's index, as in ``documents.sqlite3``). A *source* says what a
record adds to an index and which labels an erase reaches; the index projections must come
after the projection their source reads in the runner.

Each index keeps two positions: the seq applied in this process (so the runner does not feed
the same records twice) and the seq persisted on disk (where a restart resumes; the gap is
replayed).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import NamedTuple, Protocol

import numpy as np

from ..embedding.port import from_bytes, row_count, split_rows
from ..eventlog import Sealer, StoredRecord
from ..eventlog.events import (
    DocumentIngested,
    EmbedderPinned,
    ReembedStarted,
    SubjectErased,
    VectorsReembedded,
    VersionEvent,
)
from .documents.chunking import chunk
from .documents.projection import CHUNK_SLOTS, DocumentProjection
from .fulltext.index import FullTextIndex, TextDoc
from .memories.projection import MemoryProjection
from .vectors.exact import StoredVectors
from .vectors.files import sidecar_path
from .vectors.index import VectorIndex

log = logging.getLogger(__name__)

# A vector index is saved whole, so it is saved now and then, not per write.
_SAVE_EVERY_SECONDS = 30.0
_SAVE_EVERY_RECORDS = 5000


class Entry(NamedTuple):
    label: int
    container_tag: str
    text: str
    vector: bytes | None


class IndexSource(Protocol):
    def entries(self, stored: StoredRecord, *, vectors: bool = True) -> list[Entry]:
        """What this record adds to the index (nothing for an erased subject); without
        ``vectors`` the entries' vectors are left unopened (None)."""
        ...

    def erased(self, event: SubjectErased) -> list[int]:
        """The labels an erase reaches."""
        ...

    def stored_vectors(self, through: int) -> StoredVectors | None:
        """Every live vector with a label up to ``through``, ascending, if this source keeps
        them (what a loaded index's matrix is filled from); None if it does not."""
        ...

    def reembedded(self, event: VectorsReembedded) -> list[Entry]:
        """The new vectors a re-embedding batch gives this index (those still readable)."""
        ...


def _version_event(stored: StoredRecord) -> VersionEvent | None:
    """The event of ``stored`` if it makes a memory version."""
    event = stored.record.event
    return event if isinstance(event, VersionEvent) else None


class MemorySource:
    def __init__(self, sealer: Sealer, memories: MemoryProjection) -> None:
        self._sealer = sealer
        self._memories = memories

    def entries(self, stored: StoredRecord, *, vectors: bool = True) -> list[Entry]:
        event = _version_event(stored)
        if event is None:
            return []
        text = self._sealer.open_text(event.content)
        if text is None:
            return []
        sealed = event.embedding if vectors else None
        vector = None if sealed is None else self._sealer.open(sealed)
        return [Entry(stored.seq, event.container_tag, text, vector)]

    def erased(self, event: SubjectErased) -> list[int]:
        """Every version of the chain, or of the container: the memories projection keeps
        erased versions' rows (without their text), so their labels are still known."""
        if event.scope == "version" and event.version_id is not None:
            found = self._memories.by_version_ids([event.version_id])
            return [row.row_id for row in found.values()]
        if event.scope == "memory" and event.memory_id is not None:
            chain = self._memories.chain(event.memory_id)
            return [] if chain is None else [v.row_id for v in chain.versions]
        if event.scope == "container" and event.container_tag is not None:
            return self._memories.rows_of_container(event.container_tag)
        return []

    def stored_vectors(self, through: int) -> StoredVectors | None:
        return self._memories.vectors_through(through)

    def reembedded(self, event: VectorsReembedded) -> list[Entry]:
        out = []
        for item in event.versions:
            vector = self._sealer.open(item.embedding)
            if vector is not None:
                out.append(Entry(item.seq, "", "", vector))
        return out


class MemoryContextSource(MemorySource):
    """The contexts of memory versions (what each answers or continues), under the version's
    label: a version without one adds nothing. No vectors: contexts are searched by keyword
    only."""

    def entries(self, stored: StoredRecord, *, vectors: bool = True) -> list[Entry]:
        event = _version_event(stored)
        if event is None or event.context is None:
            return []
        text = self._sealer.open_text(event.context)
        return [] if text is None else [Entry(stored.seq, event.container_tag, text, None)]

    def stored_vectors(self, through: int) -> StoredVectors | None:
        return None

    def reembedded(self, event: VectorsReembedded) -> list[Entry]:
        return []  # contexts have no vectors


class DocumentSource:
    def __init__(self, sealer: Sealer, documents: DocumentProjection, dimension: int) -> None:
        self._sealer = sealer
        self._documents = documents
        self._dimension = dimension

    def entries(self, stored: StoredRecord, *, vectors: bool = True) -> list[Entry]:
        event = stored.record.event
        if not isinstance(event, DocumentIngested):
            return []
        text = self._sealer.open_text(event.content)
        if text is None:
            return []
        sealed = event.chunk_embeddings if vectors else None
        opened = None if sealed is None else self._sealer.open(sealed)
        pieces = chunk(text)
        rows = None if opened is None else split_rows(opened, len(pieces))
        base = stored.seq * CHUNK_SLOTS
        return [
            Entry(base + i, event.container_tag, piece.text, None if rows is None else rows[i])
            for i, piece in enumerate(pieces)
        ]

    def erased(self, event: SubjectErased) -> list[int]:
        return self._documents.labels_of(event)

    def stored_vectors(self, through: int) -> StoredVectors | None:
        return self._documents.vectors_through(through)

    def reembedded(self, event: VectorsReembedded) -> list[Entry]:
        out: list[Entry] = []
        for item in event.documents:
            opened = self._sealer.open(item.embedding)
            if opened is None:
                continue
            base = item.seq * CHUNK_SLOTS
            rows = split_rows(opened, row_count(opened, self._dimension)) or []
            out.extend(Entry(base + i, "", "", row) for i, row in enumerate(rows))
        return out


class VectorProjection:
    """A vector index over a source, holding the vectors of one embedder (``digest``).

    A data dir re-embedded (``embedder.reembed_started``) holds vectors of two embedders in
    its log: a fold keeps those made while its embedder was in force, and the re-embedded
    batches of it, and nothing of another (``digest`` None: every vector, for a lone index).
    """

    def __init__(
        self,
        name: str,
        path: Path,
        dimension: int,
        source: IndexSource,
        *,
        digest: str | None = None,
    ) -> None:
        self.name = name
        self._path = path
        self._dimension = dimension
        self._source = source
        self._digest = digest
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # An empty index is falsy: test None.
        loaded = VectorIndex.load(path, dim=dimension, stored=source.stored_vectors)
        self.index = loaded if loaded is not None else VectorIndex(path, dimension)
        self._applied = self.index.last_seq
        # The embedder whose vectors the log's version events carry at this point. A saved
        # index was made of this one's (a re-embedding after its save resets it, below).
        self._in_force: str | None = digest if self._applied > 0 else None
        self._unsaved = 0
        self._saved_at = time.monotonic()
        self._saving: Future[None] | None = None  # the periodic save under way, if any

    def last_seq(self) -> int:
        return self._applied

    def apply(self, records: Sequence[StoredRecord]) -> None:
        labels: list[int] = []
        vectors: list[np.ndarray] = []
        erased = False
        for stored in records:
            event = stored.record.event
            if isinstance(event, EmbedderPinned | ReembedStarted):
                self._flush(labels, vectors)
                if isinstance(event, ReembedStarted) and event.digest == self._digest:
                    self.index.rebuild([])  # what it held was another embedder's
                self._in_force = event.digest
                continue
            if isinstance(event, VectorsReembedded):
                if self._digest is None or event.digest == self._digest:
                    for entry in self._source.reembedded(event):
                        labels.append(entry.label)
                        vectors.append(from_bytes(entry.vector or b"", self._dimension))
                continue
            if self._digest is not None and self._in_force not in (None, self._digest):
                continue  # a vector of the embedder the data dir has since moved from
            if isinstance(event, SubjectErased):
                self._flush(labels, vectors)
                # Overwrite the erased vectors in place (hidden from search), and save at
                # once so the file on disk no longer holds them either.
                self.index.scrub(self._source.erased(event))
                erased = True
                continue
            for entry in self._source.entries(stored):
                if entry.vector:
                    labels.append(entry.label)
                    vectors.append(from_bytes(entry.vector, self._dimension))
        self._flush(labels, vectors)
        self._applied = records[-1].seq
        self._unsaved += len(records)
        if erased:
            self.save()  # at once: the file on disk must not keep the erased vectors
        elif self._save_due() and (self._saving is None or self._saving.done()):
            # The periodic save goes to the graph worker, off the writer's path: a save at
            # 100k memories took 0.1 to 0.3 s, a sixth of a 100k fill when made here.
            self._saving = self.index.save_later(self._applied)
            self._saving.add_done_callback(_log_failure)
            self._unsaved = 0
            self._saved_at = time.monotonic()

    def _flush(self, labels: list[int], vectors: list[np.ndarray]) -> None:
        if labels:
            self.index.add(labels, np.stack(vectors))
            labels.clear()
            vectors.clear()

    def save(self) -> None:
        self._settle()
        self.index.save(self._applied)
        self._unsaved = 0
        self._saved_at = time.monotonic()

    def _settle(self) -> None:
        """Wait for the periodic save under way (its failure is logged, not raised)."""
        if self._saving is not None:
            with contextlib.suppress(Exception):
                self._saving.result()
            self._saving = None

    def reset(self) -> None:
        self._settle()
        for path in (self._path, sidecar_path(self._path)):
            path.unlink(missing_ok=True)
        self.index = VectorIndex(self._path, self._dimension)
        self._applied = 0

    def close(self) -> None:
        self._settle()
        if self._unsaved:
            self.save()

    def _save_due(self) -> bool:
        return (
            self._unsaved >= _SAVE_EVERY_RECORDS
            or time.monotonic() - self._saved_at >= _SAVE_EVERY_SECONDS
        )


def _log_failure(future: Future[None]) -> None:
    error = future.exception()
    if error is not None:
        log.error("a periodic save of a vector index failed: %s", error)


class FullTextProjection:
    def __init__(
        self, name: str, directory: Path, source: IndexSource, *, background: bool = True
    ) -> None:
        """``background`` commits in a thread when due; without, only ``commit*`` calls
        commit (a replay places each commit where the recorded searches had it)."""
        self.name = name
        self._directory = directory
        self._source = source
        self._background = background
        self.index = FullTextIndex(directory, background=background)
        self._applied = self.index.last_seq

    def last_seq(self) -> int:
        return self._applied

    def apply(self, records: Sequence[StoredRecord]) -> None:
        docs: list[TextDoc] = []
        # The labels of erasures in a row, purged together: a purge rewrites the shards it
        # touches, and erasing a container records one erasure per chain and document. Their
        # container, when they share one, says which shard to look in.
        erased: list[int] = []
        erased_seq = 0
        containers: set[str | None] = set()
        for stored in records:
            event = stored.record.event
            if isinstance(event, SubjectErased):
                if docs:
                    self.index.add(docs, seq=None)
                    docs = []
                erased += self._source.erased(event)
                erased_seq = stored.seq
                containers.add(event.container_tag)
                continue
            if erased_seq:
                self._purge(erased, erased_seq, containers)
                erased, erased_seq, containers = [], 0, set()
            docs.extend(
                TextDoc(e.label, e.container_tag, e.text)
                for e in self._source.entries(stored, vectors=False)
            )
        if erased_seq:
            self._purge(erased, erased_seq, containers)
        if docs:
            self.index.add(docs, seq=records[-1].seq)
        else:
            self.index.advance(records[-1].seq)
        self._applied = records[-1].seq

    def _purge(self, labels: list[int], seq: int, containers: set[str | None]) -> None:
        container = next(iter(containers)) if len(containers) == 1 else None
        self.index.purge(labels, seq=seq, container=container)

    def reset(self) -> None:
        self.index.close()
        shutil.rmtree(self._directory, ignore_errors=True)
        self.index = FullTextIndex(self._directory, background=self._background)
        self._applied = 0

    def close(self) -> None:
        self.index.close()
