"""The traces read model: every recall in ``traces.sqlite3``, the receipts behind /inspect.

A trace keeps what the recall event holds: the query (opened with its container's key, so
erasing a container erases its queries), the embedder, every candidate with its scores and
ranks, what was served, per-stage latency and the request's parameters. Memory text is never
copied here: candidates name versions, and /inspect looks them up, showing erased ones as such.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import msgspec

from ..eventlog import Sealer, StoredRecord
from ..eventlog.events import RecallPerformed, SubjectErased
from .sqlite import SqliteProjection

SCHEMA = """
CREATE TABLE IF NOT EXISTS recalls (
    recall_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL UNIQUE,
    at INTEGER NOT NULL,
    origin TEXT NOT NULL,
    container_tag TEXT,
    query TEXT,
    embedder TEXT NOT NULL,
    candidates TEXT NOT NULL,
    served TEXT NOT NULL,
    latency_ms TEXT NOT NULL,
    params TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    protocol TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS recalls_by_container ON recalls(container_tag, seq);
"""

_COLUMNS = (
    "recall_id, seq, at, origin, container_tag, query, embedder, candidates, served,"
    " latency_ms, params, agent_id, protocol"
)


class Trace(msgspec.Struct, frozen=True, kw_only=True):
    recall_id: str
    seq: int
    at: int
    origin: str
    container_tag: str | None
    query: str | None
    embedder: str
    candidates: list[dict[str, object]]
    served: list[str]
    latency_ms: dict[str, float]
    params: dict[str, object]
    agent_id: str
    protocol: str


class TraceProjection(SqliteProjection):
    name = "traces"
    schema = SCHEMA

    def __init__(self, path: Path, sealer: Sealer) -> None:
        self._sealer = sealer
        super().__init__(path)

    def _fold(self, stored: StoredRecord) -> bool:
        event = stored.record.event
        if isinstance(event, RecallPerformed):
            self._insert(stored, event)
        elif isinstance(event, SubjectErased) and event.scope == "container":
            self._conn.execute(
                "UPDATE recalls SET query = NULL WHERE container_tag = ?", (event.container_tag,)
            )
            return True
        return False

    def _insert(self, stored: StoredRecord, event: RecallPerformed) -> None:
        record = stored.record
        self._conn.execute(
            f"INSERT INTO recalls ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                event.recall_id,
                record.seq,
                record.ts,
                event.origin,
                event.container_tag,
                self._sealer.open_text(event.query),
                event.embedder,
                msgspec.json.encode(event.candidates).decode(),
                json.dumps(event.served),
                json.dumps(event.latency_ms),
                json.dumps(event.params),
                record.actor.agent_id,
                record.actor.protocol,
            ),
        )

    def get(self, recall_id: str) -> Trace | None:
        rows = self._select("WHERE recall_id = ?", (recall_id,))
        return rows[0] if rows else None

    def recent(
        self,
        *,
        container_tag: str | None = None,
        origin: str | None = None,
        before_seq: int | None = None,
        limit: int = 20,
    ) -> list[Trace]:
        where: list[str] = []
        args: list[object] = []
        for clause, value in (
            ("container_tag = ?", container_tag),
            ("origin = ?", origin),
            ("seq < ?", before_seq),
        ):
            if value is not None:
                where.append(clause)
                args.append(value)
        sql = ("WHERE " + " AND ".join(where)) if where else ""
        return self._select(f"{sql} ORDER BY seq DESC LIMIT ?", (*args, limit))

    def _select(self, tail: str, args: Sequence[object]) -> list[Trace]:
        with self._lock:
            rows = self._conn.execute(f"SELECT {_COLUMNS} FROM recalls {tail}", args).fetchall()
        return [
            Trace(
                recall_id=r[0],
                seq=r[1],
                at=r[2],
                origin=r[3],
                container_tag=r[4],
                query=r[5],
                embedder=r[6],
                candidates=json.loads(r[7]),
                served=json.loads(r[8]),
                latency_ms=json.loads(r[9]),
                params=json.loads(r[10]),
                agent_id=r[11],
                protocol=r[12],
            )
            for r in rows
        ]
