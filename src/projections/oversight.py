"""The oversight read model: which agents are quarantined, and the rollbacks of agents.

A fold over ``agent.quarantined``, ``agent.released``, ``agent.rolled_back`` and
``agent.rollback_undone``, in SQLite. The set of quarantined agents is also kept in memory:
every recall asks for it.
"""

from __future__ import annotations

import threading
from pathlib import Path

import msgspec

from ..eventlog import StoredRecord
from ..eventlog.events import AgentQuarantined, AgentReleased, AgentRolledBack, RollbackUndone
from .sqlite import SqliteProjection

SCHEMA = """
CREATE TABLE IF NOT EXISTS quarantines (
    agent_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    at INTEGER NOT NULL,
    reason TEXT,
    by_agent TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS rollbacks (
    rollback_id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    since_seq INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    at INTEGER NOT NULL,
    by_agent TEXT NOT NULL,
    event TEXT NOT NULL,
    undone_seq INTEGER,
    undone_at INTEGER,
    undo_event TEXT
);
CREATE INDEX IF NOT EXISTS rollbacks_by_agent ON rollbacks(agent_id, seq);
"""


class QuarantineRow(msgspec.Struct, frozen=True, kw_only=True):
    agent_id: str
    seq: int
    at: int
    reason: str | None
    by_agent: str


class RollbackRow(msgspec.Struct, frozen=True, kw_only=True):
    rollback_id: str
    agent_id: str
    since_seq: int
    seq: int
    at: int
    by_agent: str
    event: AgentRolledBack
    undone_seq: int | None
    undone_at: int | None
    undo: RollbackUndone | None


_ROLLBACK_COLUMNS = (
    "rollback_id, agent_id, since_seq, seq, at, by_agent, event, undone_seq, undone_at, undo_event"
)


class OversightProjection(SqliteProjection):
    name = "oversight"
    schema = SCHEMA
    schema_version = 1
    folds = (AgentQuarantined, AgentReleased, AgentRolledBack, RollbackUndone)

    def __init__(self, path: Path) -> None:
        self._held_lock = threading.Lock()
        self._held: frozenset[str] = frozenset()
        self._set_aside: frozenset[str] = frozenset()
        super().__init__(path)
        self._load()

    def _fold(self, stored: StoredRecord) -> bool:
        record = stored.record
        by = record.actor.agent_id
        match record.event:
            case AgentQuarantined() as event:
                self._conn.execute(
                    "INSERT OR IGNORE INTO quarantines VALUES (?, ?, ?, ?, ?)",
                    (event.agent_id, record.seq, record.ts, event.reason, by),
                )
            case AgentReleased() as event:
                self._conn.execute("DELETE FROM quarantines WHERE agent_id = ?", (event.agent_id,))
            case AgentRolledBack() as event:
                self._conn.execute(
                    "INSERT OR IGNORE INTO rollbacks VALUES"
                    " (?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL)",
                    (
                        event.rollback_id,
                        event.agent_id,
                        event.since_seq,
                        record.seq,
                        record.ts,
                        by,
                        msgspec.json.encode(event).decode(),
                    ),
                )
            case RollbackUndone() as event:
                self._conn.execute(
                    "UPDATE rollbacks SET undone_seq = ?, undone_at = ?, undo_event = ?"
                    " WHERE rollback_id = ? AND undone_seq IS NULL",
                    (record.seq, record.ts, msgspec.json.encode(event).decode(), event.rollback_id),
                )
        return False

    def _committed(self) -> None:
        self._load()

    def _rolled_back(self) -> None:
        self._load()

    def _load(self) -> None:
        held = frozenset(q.agent_id for q in self.quarantines())
        with self._lock:
            rows = self._conn.execute(
                "SELECT DISTINCT agent_id FROM rollbacks WHERE undone_seq IS NULL"
            ).fetchall()
        with self._held_lock:
            self._held = held
            self._set_aside = held | frozenset(r[0] for r in rows)

    def set_aside(self) -> frozenset[str]:
        """The agents quarantined or rolled back (and not undone): whose feedback no longer
        counts."""
        with self._held_lock:
            return self._set_aside

    def quarantined(self) -> frozenset[str]:
        """The agents whose memories are hidden now."""
        with self._held_lock:
            return self._held

    def quarantines(self) -> list[QuarantineRow]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT agent_id, seq, at, reason, by_agent FROM quarantines ORDER BY seq"
            ).fetchall()
        return [
            QuarantineRow(agent_id=r[0], seq=r[1], at=r[2], reason=r[3], by_agent=r[4])
            for r in rows
        ]

    def quarantine(self, agent_id: str) -> QuarantineRow | None:
        found = [q for q in self.quarantines() if q.agent_id == agent_id]
        return found[0] if found else None

    def rollback(self, rollback_id: str) -> RollbackRow | None:
        found = self._rollbacks("rollback_id = ?", rollback_id)
        return found[0] if found else None

    def rollbacks(self, agent_id: str) -> list[RollbackRow]:
        """An agent's rollbacks, oldest first."""
        return self._rollbacks("agent_id = ?", agent_id)

    def _rollbacks(self, where: str, arg: str) -> list[RollbackRow]:
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_ROLLBACK_COLUMNS} FROM rollbacks WHERE {where} ORDER BY seq", (arg,)
            ).fetchall()
        return [
            RollbackRow(
                rollback_id=r[0],
                agent_id=r[1],
                since_seq=r[2],
                seq=r[3],
                at=r[4],
                by_agent=r[5],
                event=msgspec.json.decode(r[6], type=AgentRolledBack),
                undone_seq=r[7],
                undone_at=r[8],
                undo=None if r[9] is None else msgspec.json.decode(r[9], type=RollbackUndone),
            )
            for r in rows
        ]
