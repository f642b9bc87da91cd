"""The vector and full-text indexes as projections over the log.

Both index the versions of memories under their ``row_id`` (the seq of the event that made the
version, as in ``memories.sqlite3``). They must be listed after the memories projection in the
runner: an erase is applied to them by reading which rows the memories projection now holds.

Each keeps two positions: the seq applied in this process (so the runner does not feed the same
records twice) and the seq persisted on disk (where a restart resumes; the gap is replayed).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..embedding.port import from_bytes
from ..eventlog import Sealer, StoredRecord
from ..eventlog.events import MemoryEdited, MemorySuperseded, MemoryWritten, SubjectErased
from .fulltext import FullTextIndex, TextDoc
from .memories import MemoryProjection
from .vectors import VectorIndex, sidecar_path

# A vector index is saved whole, so it is saved now and then, not per write.
_SAVE_EVERY_SECONDS = 30.0
_SAVE_EVERY_RECORDS = 5000


class VectorProjection:
    name = "vectors"

    def __init__(
        self, path: Path, dimension: int, sealer: Sealer, memories: MemoryProjection
    ) -> None:
        self._path = path
        self._dimension = dimension
        self._sealer = sealer
        self._memories = memories
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.index = VectorIndex.load(path, dim=dimension) or VectorIndex(path, dimension)
        self._applied = self.index.last_seq
        self._unsaved = 0
        self._saved_at = time.monotonic()

    def last_seq(self) -> int:
        return self._applied

    def apply(self, records: Sequence[StoredRecord]) -> None:
        labels: list[int] = []
        vectors: list[np.ndarray] = []
        erased = False
        for stored in records:
            event = stored.record.event
            if isinstance(event, MemoryWritten | MemorySuperseded | MemoryEdited):
                data = None if event.embedding is None else self._sealer.open(event.embedding)
                if data is not None:
                    labels.append(stored.seq)
                    vectors.append(from_bytes(data, self._dimension))
            elif isinstance(event, SubjectErased):
                self._flush(labels, vectors)
                # Overwrite the erased vectors in place (hidden from search), and save at
                # once so the file on disk no longer holds them either.
                self.index.scrub(erased_rows(self._memories, event))
                erased = True
        self._flush(labels, vectors)
        self._applied = records[-1].seq
        self._unsaved += len(records)
        if erased or self._save_due():
            self.save()

    def _flush(self, labels: list[int], vectors: list[np.ndarray]) -> None:
        if labels:
            self.index.add(labels, np.stack(vectors))
            labels.clear()
            vectors.clear()

    def save(self) -> None:
        self.index.save(self._applied)
        self._unsaved = 0
        self._saved_at = time.monotonic()

    def reset(self) -> None:
        for path in (self._path, sidecar_path(self._path)):
            path.unlink(missing_ok=True)
        self.index = VectorIndex(self._path, self._dimension)
        self._applied = 0

    def close(self) -> None:
        if self._unsaved:
            self.save()

    def _save_due(self) -> bool:
        return (
            self._unsaved >= _SAVE_EVERY_RECORDS
            or time.monotonic() - self._saved_at >= _SAVE_EVERY_SECONDS
        )


class FullTextProjection:
    name = "fulltext"

    def __init__(self, directory: Path, sealer: Sealer, memories: MemoryProjection) -> None:
        self._directory = directory
        self._sealer = sealer
        self._memories = memories
        self.index = FullTextIndex(directory)
        self._applied = self.index.last_seq

    def last_seq(self) -> int:
        return self._applied

    def apply(self, records: Sequence[StoredRecord]) -> None:
        docs: list[TextDoc] = []
        for stored in records:
            event = stored.record.event
            if isinstance(event, MemoryWritten | MemorySuperseded | MemoryEdited):
                text = self._sealer.open_text(event.content)
                if text is not None:
                    docs.append(TextDoc(stored.seq, event.container_tag, text))
            elif isinstance(event, SubjectErased):
                if docs:
                    self.index.add(docs, seq=None)
                    docs = []
                self.index.purge(erased_rows(self._memories, event), seq=stored.seq)
        if docs:
            self.index.add(docs, seq=records[-1].seq)
        else:
            self.index.advance(records[-1].seq)
        self._applied = records[-1].seq

    def reset(self) -> None:
        self.index.close()
        shutil.rmtree(self._directory, ignore_errors=True)
        self.index = FullTextIndex(self._directory)
        self._applied = 0

    def close(self) -> None:
        self.index.close()


def erased_rows(memories: MemoryProjection, event: SubjectErased) -> list[int]:
    """The index labels an erase reaches: every version of the chain, or of the container.

    The memories projection keeps erased versions' rows (without their text), so their labels
    are still known when the indexes apply the erase.
    """
    if event.scope == "memory" and event.memory_id is not None:
        chain = memories.chain(event.memory_id)
        return [] if chain is None else [v.row_id for v in chain.versions]
    if event.scope == "container" and event.container_tag is not None:
        return memories.rows_of_container(event.container_tag)
    return []
