"""The traces read model: every recall in ``traces.sqlite3``, the receipts behind /inspect.

A trace keeps what the recall event holds: the query (opened with its container's key, so
erasing a container erases its queries, as it does a proxied turn's tool arguments and model
name), the embedder, every candidate with its scores and
ranks, what was served, per-stage latency and the request's parameters, and the grades given
to its served results (``recall.feedback``: never the reason, which stays sealed in the log).
Memory text is never copied here: candidates name versions, and /inspect looks them up, showing
erased ones as such.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from pathlib import Path

import msgspec

from ..eventlog import Sealer, StoredRecord
from ..eventlog.events import (
    CaptureDecided,
    ContextInjected,
    InjectedSource,
    ProxyTurn,
    RecallFeedback,
    RecallPerformed,
    SubjectErased,
)
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
CREATE TABLE IF NOT EXISTS turns (
    turn_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL UNIQUE,
    at INTEGER NOT NULL,
    container_tag TEXT NOT NULL,
    body TEXT NOT NULL,
    arguments TEXT,
    capture TEXT,
    agent_id TEXT NOT NULL,
    protocol TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS turns_by_container ON turns(container_tag, seq);
CREATE TABLE IF NOT EXISTS injections (
    seq INTEGER PRIMARY KEY,
    turn_id TEXT NOT NULL,
    recall_id TEXT NOT NULL,
    version_ids TEXT NOT NULL,
    renderer TEXT NOT NULL,
    sent_digest TEXT NOT NULL,
    sources TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS injections_by_turn ON injections(turn_id, seq);
CREATE TABLE IF NOT EXISTS feedback (
    seq INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    recall_id TEXT NOT NULL,
    version_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    grade INTEGER NOT NULL,
    agent_id TEXT NOT NULL,
    protocol TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS feedback_by_recall ON feedback(recall_id, seq);
-- Each version a recall served (kind 'recall') or a proxied turn injected (kind 'turn'), by
-- the seq of that record: a memory's page follows its versions to the traces, newest first.
CREATE TABLE IF NOT EXISTS version_traces (
    version_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    trace_id TEXT NOT NULL,
    PRIMARY KEY (version_id, seq)
) WITHOUT ROWID;
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


class Injection(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    recall_id: str
    version_ids: list[str]
    renderer: str
    sent_digest: str
    sources: list[InjectedSource] = []  # what the injection said of each version's source


class Rating(msgspec.Struct, frozen=True, kw_only=True):
    """One ``recall.feedback``: a grade given to a served version, and by whom."""

    seq: int
    at: int
    version_id: str
    memory_id: str
    grade: int
    agent_id: str
    protocol: str


class TurnTrace(msgspec.Struct, frozen=True, kw_only=True):
    """A proxied turn: its event (without sealed fields), the searchMemory arguments of each
    round (None once erased), its injections and its capture."""

    seq: int
    at: int
    turn: ProxyTurn
    arguments: list[list[str] | None]
    injections: list[Injection]
    capture: CaptureDecided | None
    agent_id: str
    protocol: str


class VersionTrace(msgspec.Struct, frozen=True, kw_only=True):
    """A recall that served a version, or a proxied turn that injected it."""

    trace_id: str  # the recall's id, or the turn's
    seq: int  # the ``recall.performed`` record, or the ``context.injected`` one
    at: int
    version_id: str
    container_tag: str | None
    query: str | None  # a recall's query (None once its container is erased, and for a turn)
    origin: str  # a recall's origin; ``proxy`` for a turn
    agent_id: str
    protocol: str


class TraceProjection(SqliteProjection):
    name = "traces"
    schema = SCHEMA
    # 2: injections keep what they said of each version's source; 3: feedback;
    # 4: version_traces
    schema_version = 4
    folds = (
        RecallPerformed,
        ProxyTurn,
        ContextInjected,
        CaptureDecided,
        SubjectErased,
        RecallFeedback,
    )

    def __init__(self, path: Path, sealer: Sealer) -> None:
        self._sealer = sealer
        super().__init__(path)

    def _fold(self, stored: StoredRecord) -> bool:
        event = stored.record.event
        if isinstance(event, RecallPerformed):
            self._insert(stored, event)
        elif isinstance(event, ProxyTurn):
            self._insert_turn(stored, event)
        elif isinstance(event, ContextInjected):
            self._note_versions(stored.record.seq, "turn", event.trace_id, event.version_ids)
            self._conn.execute(
                "INSERT INTO injections VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    stored.record.seq,
                    event.trace_id,
                    event.recall_id,
                    json.dumps(event.version_ids),
                    event.renderer,
                    event.sent_digest,
                    msgspec.json.encode(event.sources).decode(),
                ),
            )
        elif isinstance(event, RecallFeedback):
            record = stored.record
            self._conn.execute(
                "INSERT INTO feedback VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.seq,
                    record.ts,
                    event.recall_id,
                    event.version_id,
                    event.memory_id,
                    event.grade,
                    record.actor.agent_id,
                    record.actor.protocol,
                ),
            )
        elif isinstance(event, CaptureDecided):
            self._conn.execute(
                "UPDATE turns SET capture = ? WHERE turn_id = ?",
                (msgspec.json.encode(event).decode(), event.turn_id),
            )
        elif isinstance(event, SubjectErased) and event.scope == "container":
            self._conn.execute(
                "UPDATE recalls SET query = NULL WHERE container_tag = ?", (event.container_tag,)
            )
            self._conn.execute(
                "UPDATE turns SET arguments = NULL, body = json_set(body, '$.model', '')"
                " WHERE container_tag = ?",
                (event.container_tag,),
            )
            return True
        return False

    def sealed_in(self, container_tag: str) -> tuple[int, int]:
        """How many recalls still hold a query, and proxied turns tool arguments, sealed
        under the container's key: what erasing the container takes from its traces."""
        with self._lock:
            recalls = self._conn.execute(
                "SELECT count(*) FROM recalls WHERE container_tag = ? AND query IS NOT NULL",
                (container_tag,),
            ).fetchone()
            turns = self._conn.execute(
                "SELECT count(*) FROM turns WHERE container_tag = ? AND arguments IS NOT NULL",
                (container_tag,),
            ).fetchone()
        return int(recalls[0]), int(turns[0])

    def _insert_turn(self, stored: StoredRecord, event: ProxyTurn) -> None:
        arguments: list[list[str] | None] = []
        for done in event.rounds:
            opened = None if done.arguments is None else self._sealer.open_text(done.arguments)
            arguments.append(None if opened is None else json.loads(opened))
        # The body keeps no sealed field: the arguments live in their own column, the model
        # opened in ``model``, both emptied when the container is erased.
        model = (
            event.model
            if event.sealed_model is None
            else self._sealer.open_text(event.sealed_model)
        )
        bare = msgspec.structs.replace(
            event,
            model=model or "",
            sealed_model=None,
            rounds=[msgspec.structs.replace(r, arguments=None) for r in event.rounds],
        )
        record = stored.record
        self._conn.execute(
            "INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?)",
            (
                event.turn_id,
                record.seq,
                record.ts,
                event.container_tag,
                msgspec.json.encode(bare).decode(),
                json.dumps(arguments),
                record.actor.agent_id,
                record.actor.protocol,
            ),
        )

    def turn(self, turn_id: str) -> TurnTrace | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT seq, at, body, arguments, capture, agent_id, protocol FROM turns"
                " WHERE turn_id = ?",
                (turn_id,),
            ).fetchone()
            injections = self._conn.execute(
                "SELECT seq, recall_id, version_ids, renderer, sent_digest, sources"
                " FROM injections"
                " WHERE turn_id = ? ORDER BY seq",
                (turn_id,),
            ).fetchall()
        if row is None:
            return None
        turn = msgspec.json.decode(row[2], type=ProxyTurn)
        arguments = json.loads(row[3]) if row[3] is not None else [None] * len(turn.rounds)
        return TurnTrace(
            seq=row[0],
            at=row[1],
            turn=turn,
            arguments=arguments,
            injections=[
                Injection(
                    seq=i[0],
                    recall_id=i[1],
                    version_ids=json.loads(i[2]),
                    renderer=i[3],
                    sent_digest=i[4],
                    sources=msgspec.json.decode(i[5], type=list[InjectedSource]),
                )
                for i in injections
            ],
            capture=None if row[4] is None else msgspec.json.decode(row[4], type=CaptureDecided),
            agent_id=row[5],
            protocol=row[6],
        )

    def recent_turns(
        self,
        *,
        container_tag: str | None = None,
        before_seq: int | None = None,
        limit: int = 20,
    ) -> list[tuple[int, int, ProxyTurn, str, str]]:
        """(seq, at, turn, agent id, protocol) of the latest proxied turns, newest first."""
        where: list[str] = []
        args: list[object] = []
        for clause, value in (("container_tag = ?", container_tag), ("seq < ?", before_seq)):
            if value is not None:
                where.append(clause)
                args.append(value)
        sql = ("WHERE " + " AND ".join(where)) if where else ""
        with self._lock:
            rows = self._conn.execute(
                f"SELECT seq, at, body, agent_id, protocol FROM turns {sql}"
                " ORDER BY seq DESC LIMIT ?",
                (*args, limit),
            ).fetchall()
        return [(r[0], r[1], msgspec.json.decode(r[2], type=ProxyTurn), r[3], r[4]) for r in rows]

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
                _candidates_json(event),
                json.dumps(event.served),
                json.dumps(event.latency_ms),
                json.dumps(event.params),
                record.actor.agent_id,
                record.actor.protocol,
            ),
        )
        self._note_versions(record.seq, "recall", event.recall_id, event.served)

    def _note_versions(self, seq: int, kind: str, trace_id: str, version_ids: list[str]) -> None:
        self._conn.executemany(
            "INSERT OR IGNORE INTO version_traces VALUES (?, ?, ?, ?)",
            [(version_id, seq, kind, trace_id) for version_id in version_ids],
        )

    def of_versions(
        self, version_ids: Sequence[str], *, containers: Collection[str] | None, limit: int
    ) -> tuple[list[VersionTrace], list[VersionTrace]]:
        """The latest recalls that served any of ``version_ids`` and the latest proxied turns
        that injected any, newest first, at most ``limit`` of each; ``containers``: only those
        of these containers (None: of any, and recalls over every container too)."""
        if not version_ids:
            return [], []
        marks = ",".join("?" * len(version_ids))
        found: list[list[VersionTrace]] = []
        for kind, joined, tag, query, origin in (
            ("recall", "recalls r ON r.recall_id", "r.container_tag", "r.query", "r.origin"),
            ("turn", "turns r ON r.turn_id", "r.container_tag", "NULL", "'proxy'"),
        ):
            args: list[object] = [kind, *version_ids]
            scope = ""
            if containers is not None:
                scope = f" AND {tag} IN ({','.join('?' * len(containers))})"
                args += sorted(containers)
            with self._lock:
                rows = self._conn.execute(
                    f"SELECT v.trace_id, v.seq, r.at, v.version_id, {tag}, {query}, {origin},"
                    f" r.agent_id, r.protocol FROM version_traces v JOIN {joined} = v.trace_id"
                    f" WHERE v.kind = ? AND v.version_id IN ({marks}){scope}"
                    " ORDER BY v.seq DESC LIMIT ?",
                    (*args, limit),
                ).fetchall()
            found.append(
                [
                    VersionTrace(
                        trace_id=r[0],
                        seq=r[1],
                        at=r[2],
                        version_id=r[3],
                        container_tag=r[4],
                        query=r[5],
                        origin=r[6],
                        agent_id=r[7],
                        protocol=r[8],
                    )
                    for r in rows
                ]
            )
        return found[0], found[1]

    def ratings(self, recall_id: str) -> list[Rating]:
        """The grades given to a recall's results, oldest first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT seq, at, version_id, memory_id, grade, agent_id, protocol FROM feedback"
                " WHERE recall_id = ? ORDER BY seq",
                (recall_id,),
            ).fetchall()
        return [
            Rating(
                seq=r[0],
                at=r[1],
                version_id=r[2],
                memory_id=r[3],
                grade=r[4],
                agent_id=r[5],
                protocol=r[6],
            )
            for r in rows
        ]

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


def _candidates_json(event: RecallPerformed) -> str:
    """The candidates, each with what the learned ranker logged of it (its score, and the
    features of a served one), as the trace shows them."""
    candidates = msgspec.to_builtins(event.candidates)
    if event.learned is not None:
        for c in candidates:
            version = c["version_id"]
            if version in event.learned.scores:
                c["ranker_score"] = event.learned.scores[version]
            if version in event.learned.features:
                c["features"] = event.learned.features[version]
    return json.dumps(candidates)
