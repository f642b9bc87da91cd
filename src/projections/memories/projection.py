"""The memories read model: chains and their versions in SQLite, a fold over the log.

This module is the fold: each event applied to the tables, and the live sets kept in step
with every batch. A chain's versions form a gapless timeline in log time: ``valid_from``
inclusive, ``valid_to`` exclusive, stamped from one event. The tables and their rows are in
``memory_rows``, the reads in ``memory_queries``.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from ...clock import parse_instant
from ...eventlog import Sealer, StoredRecord
from ...eventlog.events import (
    ChainForgotten,
    ChainRestored,
    ContainerErased,
    DocumentImported,
    EmbedderPinned,
    ImportOrigin,
    MemoryDeduplicated,
    MemoryEdited,
    MemoryFlagged,
    MemoryImported,
    MemoryLinked,
    MemorySplit,
    MemorySuperseded,
    MemoryWritten,
    ProfileUpdated,
    ReembedCompleted,
    ReembedStarted,
    SubjectErased,
    VectorsReembedded,
    WriteKeyed,
)
from ...texts import content_hash
from ..journaled import JournaledSet
from .keyed import KeyedWriteTable
from .queries import MemoryQueries
from .rows import INSERT_VERSION, SCHEMA


def _encode_receipt(event: ContainerErased) -> str:
    return msgspec.json.encode(event).decode()


class MemoryProjection(MemoryQueries, KeyedWriteTable):
    """Chains and versions in ``memories.sqlite3``; reads are safe from any thread."""

    name = "memories"
    schema = SCHEMA
    # 2: versions.context; 3: links; 4: splits; 5: erasures, profile_history; 6: chain_events;
    # 7: keyed_writes; 8: chain_events holds a chain's erasure
    schema_version = 8
    folds = (
        MemoryWritten,
        MemorySplit,
        MemoryDeduplicated,
        MemorySuperseded,
        MemoryLinked,
        MemoryEdited,
        ChainForgotten,
        ChainRestored,
        SubjectErased,
        ContainerErased,
        MemoryImported,
        DocumentImported,
        EmbedderPinned,
        ReembedStarted,
        VectorsReembedded,
        ReembedCompleted,
        ProfileUpdated,
        MemoryFlagged,
        WriteKeyed,
    )

    def __init__(self, path: Path, sealer: Sealer) -> None:
        self._sealer = sealer
        # The latest version of every live chain, by container: the candidates of dedup and
        # supersede decisions and of recall. A container's set is read from the tables when
        # first asked for (so boot reads none: 100k rows took 0.8 s) and then kept in step
        # after each committed batch.
        self._live: dict[str, JournaledSet] = {}
        self._live_row: dict[str, tuple[str, int]] = {}  # memory_id -> (container, row_id)
        self._touched: set[str] = set()  # chains changed by the batch being applied
        # Chains the batch made: (container, row id) of their one version, live unless
        # another record of the batch touches them (then they are read back like the rest).
        self._born: dict[str, tuple[str, int]] = {}
        # New chains of the batch not inserted yet: (chain row, version row, vector row).
        self._written: list[
            tuple[tuple[object, ...], tuple[object, ...], tuple[int, bytes] | None]
        ] = []
        super().__init__(path)
        self._load_live()

    # --- the fold ----------------------------------------------------------------------------

    def reset(self) -> None:
        with self._lock:
            super().reset()
            self._load_live()

    def _committed(self) -> None:
        self._refresh_live(self._touched, self._born)
        self._touched.clear()
        self._born.clear()

    def _rolled_back(self) -> None:
        self._touched.clear()
        self._born.clear()
        self._written.clear()
        self._load_live()  # a container erase may have dropped live rows before the failure

    def _end_batch(self) -> None:
        self._insert_written()

    def _insert_written(self) -> None:
        """Insert the new chains held back, three statements for the whole run: a batch of
        writes spent a fifth of its apply time in one ``execute`` per row."""
        if not self._written:
            return
        chains, versions, vectors = zip(*self._written, strict=True)
        self._written.clear()
        self._conn.executemany(
            "INSERT INTO chains (memory_id, container_tag, created_seq, created_at,"
            " latest_version) VALUES (?, ?, ?, ?, 1)",
            chains,
        )
        self._conn.executemany(INSERT_VERSION, versions)
        self._conn.executemany(
            "INSERT INTO vectors VALUES (?, ?)", [v for v in vectors if v is not None]
        )

    def _fold(self, stored: StoredRecord) -> bool:
        """Apply one record, noting the chain it touched; True when it erased something."""
        record = stored.record
        event = record.event
        memory_id = getattr(event, "memory_id", None)
        if isinstance(event, MemoryWritten | MemorySplit) and memory_id not in self._touched:
            self._born[event.memory_id] = (event.container_tag, record.seq)
        elif isinstance(memory_id, str):
            self._touched.add(memory_id)
        if isinstance(event, MemorySplit):
            self._note_split(
                record.seq, event.memory_id, event.source_memory_id, event.source_version_id
            )
        if isinstance(event, MemoryWritten | MemorySplit):
            # A new chain touches no row another event reads: held back and inserted with the
            # rest of the run (before any other event is folded, so the order is kept).
            self._written.append(
                (
                    (event.memory_id, event.container_tag, record.seq, record.ts),
                    *self._version_rows(stored, event, version=1),
                )
            )
            return False
        self._insert_written()
        match event:
            case MemorySuperseded() | MemoryEdited():
                self._conn.execute(
                    "UPDATE versions SET valid_to = ? WHERE memory_id = ? AND valid_to IS NULL",
                    (record.ts, event.memory_id),
                )
                self._conn.execute(
                    "UPDATE chains SET latest_version = ? WHERE memory_id = ?",
                    (event.version, event.memory_id),
                )
                self._insert_version(stored, event, version=event.version)
            case MemoryLinked():
                self._conn.execute(
                    "INSERT INTO links VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        record.seq,
                        event.memory_id,
                        event.version_id,
                        event.target_memory_id,
                        event.target_version_id,
                        event.similarity,
                        event.evidence.reason,
                        record.ts,
                    ),
                )
                self._any_links = True
            case MemoryDeduplicated():
                self._conn.execute(
                    "INSERT INTO dedups VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        record.seq,
                        event.memory_id,
                        event.version_id,
                        record.ts,
                        record.actor.agent_id,
                        record.actor.protocol,
                    ),
                )
            case ChainForgotten():
                self._conn.execute(
                    "UPDATE chains SET forgotten = 1, forgotten_at = ?, forgotten_reason = ?"
                    " WHERE memory_id = ?",
                    (record.ts, self._sealer.open_text(event.reason), event.memory_id),
                )
                self._note_event(stored, event.memory_id)
            case ChainRestored():
                self._conn.execute(
                    "UPDATE chains SET forgotten = 0, forgotten_at = NULL,"
                    " forgotten_reason = NULL WHERE memory_id = ?",
                    (event.memory_id,),
                )
                self._note_event(stored, event.memory_id)
            case MemoryFlagged():
                self._note_event(
                    stored, event.memory_id, event.version_id, ", ".join(event.reasons)
                )
            case SubjectErased():
                return self._erase(stored, event)
            case ContainerErased():
                self._conn.execute(
                    "INSERT OR REPLACE INTO erasures VALUES (?, ?, ?, ?)",
                    (
                        event.container_tag,
                        record.seq,
                        record.ts,
                        msgspec.json.encode(event).decode(),
                    ),
                )
            case MemoryImported():
                self._fold_imported(stored, event)
            case DocumentImported():
                self._note_import(
                    record.seq,
                    "document",
                    event.document_id,
                    event.source_document_id,
                    None,
                    event.origin,
                )
            case EmbedderPinned():
                self._set_meta("embedder", msgspec.json.encode(event).decode())
            case ReembedStarted():
                # From here the data dir's vectors are the new embedder's: the old ones go,
                # and the new ones come in the batches that follow.
                self._insert_written()
                self._conn.execute("DELETE FROM vectors")
                pin = EmbedderPinned(
                    name=event.name, dimension=event.dimension, digest=event.digest
                )
                self._set_meta("embedder", msgspec.json.encode(pin).decode())
                self._set_meta("reembedding", event.digest)
            case VectorsReembedded():
                self._insert_written()
                self._conn.executemany(
                    "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                    [
                        (item.seq, vector)
                        for item in event.versions
                        if (vector := self._sealer.open(item.embedding)) is not None
                    ],
                )
            case ReembedCompleted():
                self._conn.execute("DELETE FROM meta WHERE key = 'reembedding'")
            case WriteKeyed():
                self._fold_keyed(record.seq, event)
            case ProfileUpdated():
                profile = self._sealer.open_text(event.profile)
                self._conn.execute(
                    "INSERT OR REPLACE INTO profiles VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        event.container_tag,
                        profile,
                        record.ts,
                        record.seq,
                        record.actor.agent_id,
                        record.actor.protocol,
                    ),
                )
                self._conn.execute(
                    "INSERT OR REPLACE INTO profile_history VALUES (?, ?, ?, ?, ?)",
                    (record.seq, event.container_tag, profile, record.ts, record.actor.agent_id),
                )
        return False

    def _fold_imported(self, stored: StoredRecord, event: MemoryImported) -> None:
        """A version restored from an export: its window as the file stated it. The chain's
        versions arrive in order in one append, the first with the chain-level facts."""
        chain = event.chain
        if chain is not None:
            reason = chain.forgotten_reason
            self._conn.execute(
                "INSERT INTO chains (memory_id, container_tag, created_seq, created_at,"
                " latest_version, forgotten, forgotten_at, forgotten_reason)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    event.memory_id,
                    event.container_tag,
                    stored.seq,
                    chain.created_at,
                    event.version,
                    int(chain.forgotten),
                    chain.forgotten_at,
                    None if reason is None else self._sealer.open_text(reason),
                ),
            )
        else:
            self._conn.execute(
                "UPDATE chains SET latest_version = ? WHERE memory_id = ?",
                (event.version, event.memory_id),
            )
        self._insert_version(
            stored, event, version=event.version, window=(event.valid_from, event.valid_to)
        )
        if event.split_from_memory_id is not None and event.split_from_version_id is not None:
            self._note_split(
                stored.seq, event.memory_id, event.split_from_memory_id, event.split_from_version_id
            )
        self._note_import(
            stored.seq,
            "memory",
            event.memory_id,
            event.source_memory_id,
            event.source_version_id,
            event.origin,
        )

    def _note_event(
        self,
        stored: StoredRecord,
        memory_id: str,
        version_id: str | None = None,
        detail: str | None = None,
    ) -> None:
        record = stored.record
        self._conn.execute(
            "INSERT INTO chain_events VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.seq,
                memory_id,
                record.kind,
                record.ts,
                record.actor.agent_id,
                record.actor.protocol,
                version_id,
                detail,
            ),
        )

    def _note_split(self, seq: int, memory_id: str, source: str, source_version: str) -> None:
        self._conn.execute(
            "INSERT INTO splits VALUES (?, ?, ?, ?)", (seq, memory_id, source, source_version)
        )

    def _note_import(
        self,
        row_id: int,
        kind: str,
        new_id: str,
        source_id: str,
        source_version_id: str | None,
        origin: ImportOrigin | None,
    ) -> None:
        origin = origin or ImportOrigin()
        self._conn.execute(
            "INSERT INTO imports VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row_id,
                kind,
                new_id,
                source_id,
                source_version_id,
                origin.agent_id,
                origin.protocol,
                origin.kind,
                origin.created_at,
            ),
        )

    def _insert_version(
        self,
        stored: StoredRecord,
        event: MemoryWritten | MemorySuperseded | MemoryEdited | MemoryImported | MemorySplit,
        *,
        version: int,
        window: tuple[int, int | None] | None = None,
    ) -> None:
        """Insert a version; its window opens at the log time unless given (an import)."""
        row, vector = self._version_rows(stored, event, version=version, window=window)
        self._conn.execute(INSERT_VERSION, row)
        if vector is not None:
            self._conn.execute("INSERT INTO vectors VALUES (?, ?)", vector)

    def _version_rows(
        self,
        stored: StoredRecord,
        event: MemoryWritten | MemorySuperseded | MemoryEdited | MemoryImported | MemorySplit,
        *,
        version: int,
        window: tuple[int, int | None] | None = None,
    ) -> tuple[tuple[object, ...], tuple[int, bytes] | None]:
        """The ``versions`` row of a version and its ``vectors`` row (None without one)."""
        record = stored.record
        valid_from, valid_to = (record.ts, None) if window is None else window
        content = self._sealer.open_text(event.content)
        metadata = None if event.metadata is None else self._sealer.open_text(event.metadata)
        observed = record.ts if event.observed_at is None else parse_instant(event.observed_at)
        row = (
            record.seq,
            event.version_id,
            event.memory_id,
            version,
            record.kind,
            event.container_tag,
            content,
            None if content is None else content_hash(content),
            int(event.is_static),
            metadata,
            observed,
            event.observed_at,
            valid_from,
            valid_to,
            record.actor.agent_id,
            record.actor.protocol,
            None if event.context is None else self._sealer.open_text(event.context),
        )
        vector = None if event.embedding is None else self._sealer.open(event.embedding)
        return row, None if vector is None else (record.seq, vector)

    def _erase(self, stored: StoredRecord, event: SubjectErased) -> bool:
        if event.scope == "version" and event.version_id is not None:
            # One version's text, erased with the chain split from it; its chain lives on.
            self._conn.execute(
                "DELETE FROM vectors WHERE row_id IN"
                " (SELECT row_id FROM versions WHERE version_id = ?)",
                (event.version_id,),
            )
            self._conn.execute(
                "UPDATE versions SET content = NULL, content_hash = NULL, metadata = NULL,"
                " context = NULL WHERE version_id = ?",
                (event.version_id,),
            )
            return True
        if event.scope == "profile" and event.container_tag is not None:
            for table in ("profiles", "profile_history"):
                self._conn.execute(
                    f"DELETE FROM {table} WHERE container_tag = ?", (event.container_tag,)
                )
            return True
        if event.scope == "memory" and event.memory_id is not None:
            where, arg = "memory_id = ?", event.memory_id
            self._note_event(stored, event.memory_id)  # its history says when, and by whom
        elif event.scope == "container" and event.container_tag is not None:
            where, arg = "container_tag = ?", event.container_tag
            self._conn.execute("DELETE FROM profiles WHERE container_tag = ?", (arg,))
            self._conn.execute("DELETE FROM profile_history WHERE container_tag = ?", (arg,))
            self._erase_keyed(arg)
            self._live.pop(event.container_tag, None)
            for memory_id, (container, _) in list(self._live_row.items()):
                if container == event.container_tag:
                    del self._live_row[memory_id]
        else:
            return False
        self._conn.execute(
            f"DELETE FROM vectors WHERE row_id IN (SELECT row_id FROM versions WHERE {where})",
            (arg,),
        )
        self._conn.execute(
            f"UPDATE versions SET content = NULL, content_hash = NULL, metadata = NULL,"
            f" context = NULL"
            f" WHERE {where}",
            (arg,),
        )
        self._conn.execute(
            f"UPDATE chains SET erased = 1, forgotten_reason = NULL WHERE {where}", (arg,)
        )
        return True

    def _load_live(self) -> None:
        """Forget every container's set; each is read again when next asked for."""
        self._live = {}
        self._live_row = {}
        found = self._conn.execute("SELECT EXISTS (SELECT 1 FROM links)").fetchone()
        self._any_links = bool(found[0])

    def _refresh_live(self, touched: set[str], born: dict[str, tuple[str, int]]) -> None:
        for memory_id, (container_tag, row_id) in born.items():
            if memory_id in touched:
                continue
            # Only held sets are kept in step; the others are read whole when asked for.
            live = self._live.get(container_tag)
            if live is not None:
                live.add(row_id)
                self._live_row[memory_id] = (container_tag, row_id)
        for memory_id in touched:
            old = self._live_row.pop(memory_id, None)
            if old is not None and (held := self._live.get(old[0])) is not None:
                held.discard(old[1])
            row = self._conn.execute(
                self._LIVE_SQL + " AND v.memory_id = ?", (memory_id,)
            ).fetchone()
            # Only held sets are kept in step; the others are read whole when asked for.
            if row is not None and row[1] in self._live:
                self._live[row[1]].add(row[2])
                self._live_row[memory_id] = (row[1], row[2])

    def _set_meta(self, key: str, value: str) -> None:
        self._conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
