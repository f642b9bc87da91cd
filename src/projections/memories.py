"""The memories read model: chains and their versions in SQLite, a fold over the log.

Tables (documented in ``docs/projections.md`` for anyone opening ``memories.sqlite3``):
``chains`` (one row per memory), ``versions`` (every version with its validity window and its
provenance; ``row_id`` is the seq of the event that made it, and the label of the version in
the vector and full-text indexes), ``vectors`` (each version's embedding, read back for
diversity reordering), ``imports`` (where imported versions and documents came from),
``dedups`` and ``meta``. A chain's versions form a gapless timeline in
log time: ``valid_from`` inclusive, ``valid_to`` exclusive, stamped from one event.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path

import msgspec
import numpy as np

from ..clock import parse_instant
from ..eventlog import Sealer, StoredRecord
from ..eventlog.events import (
    ChainForgotten,
    ChainRestored,
    DocumentImported,
    EmbedderPinned,
    ImportOrigin,
    MemoryDeduplicated,
    MemoryEdited,
    MemoryImported,
    MemorySuperseded,
    MemoryWritten,
    ProfileUpdated,
    SubjectErased,
)
from .sqlite import SqliteProjection
from .vectors import StoredVectors

SCHEMA = """
CREATE TABLE IF NOT EXISTS chains (
    memory_id TEXT PRIMARY KEY,
    container_tag TEXT NOT NULL,
    created_seq INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    latest_version INTEGER NOT NULL,
    forgotten INTEGER NOT NULL DEFAULT 0,
    forgotten_at INTEGER,
    forgotten_reason TEXT,
    erased INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS versions (
    row_id INTEGER PRIMARY KEY,
    version_id TEXT NOT NULL UNIQUE,
    memory_id TEXT NOT NULL REFERENCES chains(memory_id),
    version INTEGER NOT NULL,
    kind TEXT NOT NULL,
    container_tag TEXT NOT NULL,
    content TEXT,
    content_hash TEXT,
    is_static INTEGER NOT NULL,
    metadata TEXT,
    observed_at INTEGER NOT NULL,
    observed_at_text TEXT,
    valid_from INTEGER NOT NULL,
    valid_to INTEGER,
    agent_id TEXT NOT NULL,
    protocol TEXT NOT NULL,
    context TEXT,
    UNIQUE (memory_id, version)
);
CREATE UNIQUE INDEX IF NOT EXISTS versions_one_latest ON versions(memory_id) WHERE valid_to IS NULL;
CREATE INDEX IF NOT EXISTS versions_by_container ON versions(container_tag, valid_to);
CREATE INDEX IF NOT EXISTS versions_by_hash ON versions(container_tag, content_hash)
    WHERE valid_to IS NULL;
CREATE TABLE IF NOT EXISTS vectors (
    row_id INTEGER PRIMARY KEY REFERENCES versions(row_id),
    vector BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS profiles (
    container_tag TEXT PRIMARY KEY,
    profile TEXT,
    updated_at INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    agent_id TEXT NOT NULL,
    protocol TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS imports (
    row_id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    source_id TEXT NOT NULL,
    source_version_id TEXT,
    origin_agent_id TEXT,
    origin_protocol TEXT,
    origin_kind TEXT,
    origin_at INTEGER
);
CREATE INDEX IF NOT EXISTS imports_by_source ON imports(kind, source_id);
CREATE TABLE IF NOT EXISTS dedups (
    seq INTEGER PRIMARY KEY,
    memory_id TEXT NOT NULL,
    version_id TEXT NOT NULL,
    at INTEGER NOT NULL,
    agent_id TEXT NOT NULL,
    protocol TEXT NOT NULL
);
"""


class VersionRow(msgspec.Struct, frozen=True, kw_only=True):
    row_id: int
    version_id: str
    memory_id: str
    version: int
    kind: str
    container_tag: str
    content: str | None
    is_static: bool
    metadata: dict[str, object] | None
    observed_at: int
    observed_at_text: str | None
    valid_from: int
    valid_to: int | None
    agent_id: str
    protocol: str
    forgotten: bool
    erased: bool
    context: str | None = None

    @property
    def seq(self) -> int:
        """The seq of the event that made this version."""
        return self.row_id


class ChainView(msgspec.Struct, frozen=True, kw_only=True):
    memory_id: str
    container_tag: str
    created_at: int
    latest_version: int
    forgotten: bool
    forgotten_at: int | None
    forgotten_reason: str | None
    erased: bool
    versions: list[VersionRow]


class ImportRow(msgspec.Struct, frozen=True, kw_only=True):
    """An imported version (its ``row_id``) or document, and where it came from."""

    row_id: int
    id: str
    source_id: str
    source_version_id: str | None
    origin: ImportOrigin


def content_hash(content: str) -> str:
    """The identity of a content for exact-duplicate detection: NFC, whitespace collapsed."""
    normal = " ".join(unicodedata.normalize("NFC", content).split())
    return hashlib.sha256(normal.encode()).hexdigest()


_EMPTY: frozenset[int] = frozenset()

_VERSION_COLUMNS = """
    v.row_id, v.version_id, v.memory_id, v.version, v.kind, v.container_tag, v.content,
    v.is_static, v.metadata, v.observed_at, v.observed_at_text, v.valid_from, v.valid_to,
    v.agent_id, v.protocol, c.forgotten, c.erased, v.context
"""
_FROM_VERSIONS = "FROM versions v JOIN chains c ON c.memory_id = v.memory_id"
_INSERT_VERSION = "INSERT INTO versions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


class MemoryProjection(SqliteProjection):
    """Chains and versions in ``memories.sqlite3``; reads are safe from any thread."""

    name = "memories"
    schema = SCHEMA
    schema_version = 2  # 2: versions.context
    folds = (
        MemoryWritten,
        MemoryDeduplicated,
        MemorySuperseded,
        MemoryEdited,
        ChainForgotten,
        ChainRestored,
        SubjectErased,
        MemoryImported,
        DocumentImported,
        EmbedderPinned,
        ProfileUpdated,
    )

    def __init__(self, path: Path, sealer: Sealer) -> None:
        self._sealer = sealer
        # The latest version of every live chain, by container: the candidates of dedup and
        # supersede decisions and of recall. A container's set is read from the tables when
        # first asked for (so boot reads none: 100k rows took 0.8 s) and then kept in step
        # after each committed batch.
        self._live: dict[str, set[int]] = {}
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
        self._conn.executemany(_INSERT_VERSION, versions)
        self._conn.executemany(
            "INSERT INTO vectors VALUES (?, ?)", [v for v in vectors if v is not None]
        )

    def _fold(self, stored: StoredRecord) -> bool:
        """Apply one record, noting the chain it touched; True when it erased something."""
        record = stored.record
        event = record.event
        memory_id = getattr(event, "memory_id", None)
        if isinstance(event, MemoryWritten) and memory_id not in self._touched:
            self._born[event.memory_id] = (event.container_tag, record.seq)
        elif isinstance(memory_id, str):
            self._touched.add(memory_id)
        if isinstance(event, MemoryWritten):
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
            case ChainRestored():
                self._conn.execute(
                    "UPDATE chains SET forgotten = 0, forgotten_at = NULL,"
                    " forgotten_reason = NULL WHERE memory_id = ?",
                    (event.memory_id,),
                )
            case SubjectErased():
                return self._erase(event)
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
            case ProfileUpdated():
                self._conn.execute(
                    "INSERT OR REPLACE INTO profiles VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        event.container_tag,
                        self._sealer.open_text(event.profile),
                        record.ts,
                        record.seq,
                        record.actor.agent_id,
                        record.actor.protocol,
                    ),
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
        self._note_import(
            stored.seq,
            "memory",
            event.memory_id,
            event.source_memory_id,
            event.source_version_id,
            event.origin,
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
        event: MemoryWritten | MemorySuperseded | MemoryEdited | MemoryImported,
        *,
        version: int,
        window: tuple[int, int | None] | None = None,
    ) -> None:
        """Insert a version; its window opens at the log time unless given (an import)."""
        row, vector = self._version_rows(stored, event, version=version, window=window)
        self._conn.execute(_INSERT_VERSION, row)
        if vector is not None:
            self._conn.execute("INSERT INTO vectors VALUES (?, ?)", vector)

    def _version_rows(
        self,
        stored: StoredRecord,
        event: MemoryWritten | MemorySuperseded | MemoryEdited | MemoryImported,
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

    def _erase(self, event: SubjectErased) -> bool:
        if event.scope == "memory" and event.memory_id is not None:
            where, arg = "memory_id = ?", event.memory_id
        elif event.scope == "container" and event.container_tag is not None:
            where, arg = "container_tag = ?", event.container_tag
            self._conn.execute("DELETE FROM profiles WHERE container_tag = ?", (arg,))
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

    _LIVE_SQL = (
        "SELECT v.memory_id, v.container_tag, v.row_id FROM versions v"
        " JOIN chains c ON c.memory_id = v.memory_id"
        " WHERE v.valid_to IS NULL AND c.forgotten = 0 AND c.erased = 0"
    )

    def _load_live(self) -> None:
        """Forget every container's set; each is read again when next asked for."""
        self._live = {}
        self._live_row = {}

    def _container_live(self, container_tag: str) -> AbstractSet[int]:
        """The container's live set, read from the tables if not held; caller holds the lock."""
        live = self._live.get(container_tag)
        if live is not None:
            return live
        live = set()
        rows = self._conn.execute(self._LIVE_SQL + " AND v.container_tag = ?", (container_tag,))
        for memory_id, _, row_id in rows:
            live.add(row_id)
            self._live_row[memory_id] = (container_tag, row_id)
        if not live:
            return _EMPTY  # not kept: any container name may be asked for
        self._live[container_tag] = live
        return live

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
            if old is not None:
                self._live.get(old[0], set()).discard(old[1])
            row = self._conn.execute(
                self._LIVE_SQL + " AND v.memory_id = ?", (memory_id,)
            ).fetchone()
            # Only held sets are kept in step; the others are read whole when asked for.
            if row is not None and row[1] in self._live:
                self._live[row[1]].add(row[2])
                self._live_row[memory_id] = (row[1], row[2])

    def live_rows(self, container_tag: str) -> AbstractSet[int]:
        """Row ids of the latest versions of the container's live chains.

        A live view, not a copy (recall and writes ask for it on every call, and a container
        may hold many thousands): it changes as batches commit, and callers must not mutate it.
        """
        live = self._live.get(container_tag)  # held: no lock, a batch being applied may hold it
        if live is not None:
            return live
        with self._lock:
            return self._container_live(container_tag)

    def _meta(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set_meta(self, key: str, value: str) -> None:
        self._conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # --- queries -------------------------------------------------------------------------------

    def profile(self, container_tag: str) -> tuple[dict[str, object], int] | None:
        """A container's profile (decoded JSON) and when it was set, if it has one."""
        with self._lock:
            row = self._conn.execute(
                "SELECT profile, updated_at FROM profiles WHERE container_tag = ?",
                (container_tag,),
            ).fetchone()
        if row is None or row[0] is None:
            return None
        profile: dict[str, object] = json.loads(row[0])
        return profile, int(row[1])

    def pinned_embedder(self) -> EmbedderPinned | None:
        raw = self._meta("embedder")
        return None if raw is None else msgspec.json.decode(raw, type=EmbedderPinned)

    def chain(self, memory_id: str) -> ChainView | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT memory_id, container_tag, created_at, latest_version, forgotten,"
                " forgotten_at, forgotten_reason, erased FROM chains WHERE memory_id = ?",
                (memory_id,),
            ).fetchone()
            if row is None:
                return None
            versions = self._versions(
                f"SELECT {_VERSION_COLUMNS} {_FROM_VERSIONS} WHERE v.memory_id = ?"
                " ORDER BY v.version",
                (memory_id,),
            )
        return ChainView(
            memory_id=row[0],
            container_tag=row[1],
            created_at=row[2],
            latest_version=row[3],
            forgotten=bool(row[4]),
            forgotten_at=row[5],
            forgotten_reason=row[6],
            erased=bool(row[7]),
            versions=versions,
        )

    def latest(self, memory_id: str) -> VersionRow | None:
        rows = self._versions(
            f"SELECT {_VERSION_COLUMNS} {_FROM_VERSIONS}"
            " WHERE v.memory_id = ? AND v.valid_to IS NULL",
            (memory_id,),
        )
        return rows[0] if rows else None

    def live_duplicates(self, container_tag: str, digests: Sequence[str]) -> dict[str, VersionRow]:
        """For each content hash, the latest version of a live chain in the container with
        that content (the oldest such chain, if several): one query for a whole batch."""
        wanted = sorted(set(digests))
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        found: dict[str, VersionRow] = {}
        rows = self._versions(
            f"SELECT {_VERSION_COLUMNS} {_FROM_VERSIONS} WHERE v.container_tag = ?"
            f" AND v.content_hash IN ({marks}) AND v.valid_to IS NULL AND c.forgotten = 0"
            " AND c.erased = 0 ORDER BY v.row_id",
            (container_tag, *wanted),
        )
        for row in rows:
            found.setdefault(content_hash(row.content or ""), row)
        return found

    def by_version_ids(self, version_ids: Sequence[str]) -> dict[str, VersionRow]:
        return {r.version_id: r for r in self._rows_where("v.version_id", version_ids)}

    def stamps(self, row_ids: Sequence[int]) -> dict[int, tuple[str, int]]:
        """``row_id -> (version_id, observed_at)`` of the versions that exist: what ranking
        needs of every candidate, without reading whole rows."""
        if not row_ids:
            return {}
        marks = ",".join("?" * len(row_ids))
        with self._lock:
            found = self._conn.execute(
                f"SELECT row_id, version_id, observed_at FROM versions WHERE row_id IN ({marks})",
                tuple(row_ids),
            ).fetchall()
        return {int(r): (str(v), int(o)) for r, v, o in found}

    def by_row_ids(self, row_ids: Sequence[int]) -> dict[int, VersionRow]:
        return {r.row_id: r for r in self._rows_where("v.row_id", row_ids)}

    def _rows_where(self, column: str, values: Sequence[object]) -> list[VersionRow]:
        if not values:
            return []
        marks = ",".join("?" * len(values))
        return self._versions(
            f"SELECT {_VERSION_COLUMNS} {_FROM_VERSIONS} WHERE {column} IN ({marks})",
            tuple(values),
        )

    def list_latest(
        self,
        *,
        container_tag: str | None = None,
        include_forgotten: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> tuple[list[VersionRow], int]:
        """The latest version of each chain, newest first, and the total count."""
        where = ["v.valid_to IS NULL", "c.erased = 0"]
        args: list[object] = []
        if container_tag is not None:
            where.append("v.container_tag = ?")
            args.append(container_tag)
        if not include_forgotten:
            where.append("c.forgotten = 0")
        clause = " AND ".join(where)
        with self._lock:
            total = self._conn.execute(
                f"SELECT count(*) {_FROM_VERSIONS} WHERE {clause}", args
            ).fetchone()[0]
        rows = self._versions(
            f"SELECT {_VERSION_COLUMNS} {_FROM_VERSIONS} WHERE {clause}"
            " ORDER BY v.row_id DESC LIMIT ? OFFSET ?",
            (*args, limit, offset),
        )
        return rows, int(total)

    def visible_rows(
        self,
        *,
        container_tag: str | None,
        as_of: int | None,
        include_forgotten: bool,
    ) -> frozenset[int]:
        """Versions a search may serve: the latest, or those valid at ``as_of`` (log time,
        validFrom inclusive, validTo exclusive). Forgetting applies at query time, so a chain
        forgotten since ``as_of`` stays hidden unless forgotten chains are asked for."""
        where = ["c.erased = 0"]
        args: list[object] = []
        if as_of is None:
            where.append("v.valid_to IS NULL")
        else:
            where.append("v.valid_from <= ? AND (v.valid_to IS NULL OR v.valid_to > ?)")
            args += [as_of, as_of]
        if container_tag is not None:
            where.append("v.container_tag = ?")
            args.append(container_tag)
        if not include_forgotten:
            where.append("c.forgotten = 0")
        with self._lock:
            rows = self._conn.execute(
                f"SELECT v.row_id {_FROM_VERSIONS} WHERE {' AND '.join(where)}", args
            ).fetchall()
        return frozenset(int(r[0]) for r in rows)

    def vectors_of(self, row_ids: Sequence[int]) -> list[tuple[int, bytes]]:
        if not row_ids:
            return []
        marks = ",".join("?" * len(row_ids))
        with self._lock:
            rows = self._conn.execute(
                f"SELECT row_id, vector FROM vectors WHERE row_id IN ({marks})", tuple(row_ids)
            ).fetchall()
        return [(int(r), bytes(v)) for r, v in rows]

    def vectors_through(self, seq: int) -> StoredVectors | None:
        """Every stored vector of a version made at or before ``seq``, by ascending row id,
        as one matrix; None if they are not all of one width."""
        with self._lock:
            found = self._conn.execute(
                "SELECT row_id, vector FROM vectors WHERE row_id <= ? ORDER BY row_id", (seq,)
            ).fetchall()
        if not found:
            return StoredVectors(np.empty(0, dtype=np.int64), np.empty((0, 0), dtype=np.float32))
        width = len(found[0][1])
        if width == 0 or width % 4 or any(len(v) != width for _, v in found):
            return None
        labels = np.fromiter((r for r, _ in found), dtype=np.int64, count=len(found))
        data = np.frombuffer(b"".join(v for _, v in found), dtype=np.float32)
        return StoredVectors(labels, data.reshape(len(found), width // 4))

    def rows_of_container(self, container_tag: str) -> list[int]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT row_id FROM versions WHERE container_tag = ?", (container_tag,)
            ).fetchall()
        return [int(r[0]) for r in rows]

    # --- portability ---------------------------------------------------------------------

    def chain_ids(self, container_tag: str | None = None) -> list[str]:
        """Ids of the chains not erased, by container, then in the order they were made."""
        where: str = "WHERE erased = 0"
        args: tuple[str, ...] = ()
        if container_tag is not None:
            where, args = ("WHERE erased = 0 AND container_tag = ?", (container_tag,))
        with self._lock:
            rows = self._conn.execute(
                f"SELECT memory_id FROM chains {where} ORDER BY container_tag, created_seq", args
            ).fetchall()
        return [str(r[0]) for r in rows]

    def profiles(self, container_tag: str | None = None) -> list[tuple[str, dict[str, object]]]:
        """Every container's profile (decoded JSON), by container."""
        where: str = "WHERE profile IS NOT NULL"
        args: tuple[str, ...] = ()
        if container_tag is not None:
            where, args = ("WHERE profile IS NOT NULL AND container_tag = ?", (container_tag,))
        with self._lock:
            rows = self._conn.execute(
                f"SELECT container_tag, profile FROM profiles {where} ORDER BY container_tag", args
            ).fetchall()
        return [(str(tag), json.loads(profile)) for tag, profile in rows]

    def imports_of(self, kind: str, new_id: str) -> list[ImportRow]:
        """Where an imported chain's versions (or an imported document) came from."""
        return self._imports("kind = ? AND id = ?", (kind, new_id))

    def imported_from(self, kind: str, source_id: str) -> list[ImportRow]:
        """The imports made from a source chain (or document), oldest first."""
        return self._imports("kind = ? AND source_id = ?", (kind, source_id))

    def _imports(self, where: str, args: tuple[object, ...]) -> list[ImportRow]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT row_id, id, source_id, source_version_id, origin_agent_id,"
                f" origin_protocol, origin_kind, origin_at FROM imports WHERE {where}"
                " ORDER BY row_id",
                args,
            ).fetchall()
        return [
            ImportRow(
                row_id=r[0],
                id=r[1],
                source_id=r[2],
                source_version_id=r[3],
                origin=ImportOrigin(agent_id=r[4], protocol=r[5], kind=r[6], created_at=r[7]),
            )
            for r in rows
        ]

    def dump(self) -> dict[str, list[tuple[object, ...]]]:
        """Every table's rows, ordered: for comparing two projections."""
        with self._lock:
            return {
                table: self._conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
                for table in ("chains", "versions", "vectors", "dedups", "profiles", "imports")
            }

    def _versions(self, sql: str, args: Sequence[object]) -> list[VersionRow]:
        with self._lock:
            rows = self._conn.execute(sql, args).fetchall()
        return [
            VersionRow(
                row_id=r[0],
                version_id=r[1],
                memory_id=r[2],
                version=r[3],
                kind=r[4],
                container_tag=r[5],
                content=r[6],
                is_static=bool(r[7]),
                metadata=None if r[8] is None else json.loads(r[8]),
                observed_at=r[9],
                observed_at_text=r[10],
                valid_from=r[11],
                valid_to=r[12],
                agent_id=r[13],
                protocol=r[14],
                forgotten=bool(r[15]),
                erased=bool(r[16]),
                context=r[17],
            )
            for r in rows
        ]
