"""The memories tables and their rows: the schema, the row types read back, and the column lists.

Tables (documented in ``docs/projections.md`` for anyone opening ``memories.sqlite3``):
``chains`` (one row per memory), ``versions`` (every version with its validity window and its
provenance; ``row_id`` is the seq of the event that made it, and the label of the version in
the vector and full-text indexes), ``vectors`` (each version's embedding, read back for
diversity reordering), ``imports`` (where imported versions and documents came from),
``dedups``, ``links`` (a newer memory that may update an older one: both live, the older
marked possibly outdated), ``splits`` (a chain started from a version of another),
``keyed_writes`` (the answer of each write sent with an idempotency key) and ``meta``.
A chain's versions form a gapless timeline in log time: ``valid_from`` inclusive,
``valid_to`` exclusive, stamped from one event.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import msgspec

from ...eventlog.events import ImportOrigin

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
-- A quarantine hides every version an agent wrote; a rollback finds what it changed.
CREATE INDEX IF NOT EXISTS versions_by_agent ON versions(agent_id, container_tag);
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
CREATE TABLE IF NOT EXISTS links (
    seq INTEGER PRIMARY KEY,
    memory_id TEXT NOT NULL,
    version_id TEXT NOT NULL,
    target_memory_id TEXT NOT NULL,
    target_version_id TEXT NOT NULL,
    similarity REAL NOT NULL,
    reason TEXT NOT NULL,
    at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS links_by_memory ON links(memory_id);
CREATE INDEX IF NOT EXISTS links_by_target ON links(target_memory_id);
CREATE TABLE IF NOT EXISTS splits (
    seq INTEGER PRIMARY KEY,
    memory_id TEXT NOT NULL,
    source_memory_id TEXT NOT NULL,
    source_version_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS splits_by_memory ON splits(memory_id);
CREATE INDEX IF NOT EXISTS splits_by_source ON splits(source_memory_id);
-- Every profile a container had, by whom: a quarantined writer's is not served, the one
-- before it is.
CREATE TABLE IF NOT EXISTS profile_history (
    seq INTEGER PRIMARY KEY,
    container_tag TEXT NOT NULL,
    profile TEXT,
    updated_at INTEGER NOT NULL,
    agent_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS profile_history_by_container ON profile_history(container_tag, seq);
-- The receipt of each container's last erasure: a repeated erasure answers it again.
CREATE TABLE IF NOT EXISTS erasures (
    container_tag TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    at INTEGER NOT NULL,
    receipt TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS dedups (
    seq INTEGER PRIMARY KEY,
    memory_id TEXT NOT NULL,
    version_id TEXT NOT NULL,
    at INTEGER NOT NULL,
    agent_id TEXT NOT NULL,
    protocol TEXT NOT NULL
);
-- Forgets, restores, flags and the erasure of a chain: with its versions, links, splits and
-- dedups, its whole history. No text (a forget's reason is the chain's own column).
CREATE TABLE IF NOT EXISTS chain_events (
    seq INTEGER PRIMARY KEY,
    memory_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    at INTEGER NOT NULL,
    agent_id TEXT NOT NULL,
    protocol TEXT NOT NULL,
    version_id TEXT,
    detail TEXT
);
CREATE INDEX IF NOT EXISTS chain_events_by_memory ON chain_events(memory_id);
-- Writes sent with an Idempotency-Key (``write.keyed``): what a retry is answered. No text.
CREATE TABLE IF NOT EXISTS keyed_writes (
    container_tag TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    key_digest TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    seq INTEGER NOT NULL,
    outcomes TEXT NOT NULL,
    PRIMARY KEY (container_tag, agent_id, key_digest)
);
"""


class HistoryRow(msgspec.Struct, frozen=True, kw_only=True):
    """One event in a chain's history, as the projection folded it."""

    seq: int
    at: int
    kind: str  # the event's kind: memory.written, memory.linked, chain.forgotten, ...
    agent_id: str | None
    protocol: str | None
    version: int | None = None  # the version it made, for the events that make one
    other_memory_id: str | None = None  # the chain a link or a split names
    detail: str | None = None  # a link's reason code, a flag's reasons


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


class LinkRow(msgspec.Struct, frozen=True, kw_only=True):
    """A newer memory that may update an older one (``memory.linked``)."""

    seq: int
    memory_id: str  # the newer
    version_id: str
    target_memory_id: str  # the older
    target_version_id: str
    similarity: float
    reason: str
    at: int


class SplitRow(msgspec.Struct, frozen=True, kw_only=True):
    """A chain started from a copy of a version of another (``memory.split``, or an imported
    chain that was one)."""

    seq: int
    memory_id: str  # the chain split out
    source_memory_id: str
    source_version_id: str


class ImportRow(msgspec.Struct, frozen=True, kw_only=True):
    """An imported version (its ``row_id``) or document, and where it came from."""

    row_id: int
    id: str
    source_id: str
    source_version_id: str | None
    origin: ImportOrigin


VERSION_COLUMNS = """
    v.row_id, v.version_id, v.memory_id, v.version, v.kind, v.container_tag, v.content,
    v.is_static, v.metadata, v.observed_at, v.observed_at_text, v.valid_from, v.valid_to,
    v.agent_id, v.protocol, c.forgotten, c.erased, v.context
"""
FROM_VERSIONS = "FROM versions v JOIN chains c ON c.memory_id = v.memory_id"
INSERT_VERSION = "INSERT INTO versions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


def decode_version(r: Sequence[Any]) -> VersionRow:
    """A version read with ``VERSION_COLUMNS``, in their order."""
    return VersionRow(
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
