"""The agents read model: which API keys open the door, and for which agent, in SQLite.

A fold over ``agent.key_added`` and ``agent.key_revoked``: the keys table holds each key's
public id, its agent, the digest of its secret and the containers it may reach. The secret is
in no event, so it is in no projection either. The set of live keys is also kept in memory,
since every request asks for it.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import msgspec

from ..eventlog import StoredRecord
from ..eventlog.events import AgentKeyAdded, AgentKeyRevoked
from .sqlite import SqliteProjection

SCHEMA = """
CREATE TABLE IF NOT EXISTS keys (
    key_id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    digest TEXT NOT NULL,
    containers TEXT,
    created_seq INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER,
    admin INTEGER NOT NULL DEFAULT 0
);
"""


class KeyRow(msgspec.Struct, frozen=True, kw_only=True):
    key_id: str
    agent_id: str
    digest: str
    containers: tuple[str, ...] | None  # None: every container
    created_seq: int
    created_at: int
    revoked_at: int | None
    admin: bool = False


class AgentProjection(SqliteProjection):
    name = "agents"
    schema = SCHEMA
    schema_version = 2  # 2: keys.admin
    folds = (AgentKeyAdded, AgentKeyRevoked)

    def __init__(self, path: Path) -> None:
        self._live_lock = threading.Lock()
        self._live: dict[str, KeyRow] = {}
        super().__init__(path)
        self._load()

    def _fold(self, stored: StoredRecord) -> bool:
        record = stored.record
        match record.event:
            case AgentKeyAdded() as event:
                containers = None if event.containers is None else json.dumps(event.containers)
                self._conn.execute(
                    "INSERT OR IGNORE INTO keys VALUES (?, ?, ?, ?, ?, ?, NULL, ?)",
                    (
                        event.key_id,
                        event.agent_id,
                        event.digest,
                        containers,
                        record.seq,
                        record.ts,
                        int(event.admin),
                    ),
                )
            case AgentKeyRevoked() as event:
                self._conn.execute(
                    "UPDATE keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL",
                    (record.ts, event.key_id),
                )
        return False

    def _committed(self) -> None:
        self._load()

    def _rolled_back(self) -> None:
        self._load()

    def _load(self) -> None:
        live = {row.key_id: row for row in self.keys() if row.revoked_at is None}
        with self._live_lock:
            self._live = live

    def live(self, key_id: str) -> KeyRow | None:
        """The key with this id, if it was made and not revoked."""
        with self._live_lock:
            return self._live.get(key_id)

    def live_count(self) -> int:
        with self._live_lock:
            return len(self._live)

    def any_live(self) -> bool:
        """Whether any key opens the door (then every request needs one)."""
        with self._live_lock:
            return bool(self._live)

    def keys(self) -> list[KeyRow]:
        """Every key ever made, revoked ones included, oldest first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT key_id, agent_id, digest, containers, created_seq, created_at,"
                " revoked_at, admin FROM keys ORDER BY created_seq"
            ).fetchall()
        return [
            KeyRow(
                key_id=r[0],
                agent_id=r[1],
                digest=r[2],
                containers=None if r[3] is None else tuple(json.loads(r[3])),
                created_seq=r[4],
                created_at=r[5],
                revoked_at=r[6],
                admin=bool(r[7]),
            )
            for r in rows
        ]
