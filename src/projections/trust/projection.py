"""The trust read model: each agent's Beta posterior, folded from the log (seed 001 §4).

Signals are derived from events as they are folded, in log order, so a score is as
reproducible as the log and ``GET /agents/{id}`` lists the events that moved it:

- ``used`` (+): a ``recall.used`` by another agent or the user named a version it wrote;
  once per version and user of it, weighted by the user's own trust.
- ``consistent`` (+): its write was an exact duplicate of another agent's live version.
- ``contradiction`` (-): its write superseded or edited a version of another agent that was
  established (the user's own, used or confirmed by someone other than its writer).
- ``flagged`` (-): a ``memory.flagged`` the write path appended with its write.
- ``burst`` (-): its writes in one window reached ``burst_min`` and ``burst_factor`` times its
  own earlier rate; once per window.
- ``forgotten`` / ``erased`` (-): the user or another agent forgot or erased a chain whose
  latest version it wrote; once per chain, weighted by the remover's trust.
- ``restored`` (+): someone other than its writer restored a chain whose forget had signalled
  against the writer: the forget's weight is given back, and a later forget counts again.
- ``feedback`` (+/-): an ``agent.signal`` event, as it states.

It also keeps, per version, its writer, its sources (the agents it derives from: a
correction's or a split's source version, an import's stated origin, the memories a proxied
turn had injected when its model saved a fact) and its status (flagged, captured), which
recall carries into its results. No memory text is kept here.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

from ...eventlog import StoredRecord
from ...eventlog.events import (
    AgentKeyAdded,
    AgentRolledBack,
    AgentSignal,
    CaptureDecided,
    ChainForgotten,
    ChainRestored,
    ContextInjected,
    DocumentIngested,
    MemoryDeduplicated,
    MemoryEdited,
    MemoryFlagged,
    MemoryImported,
    MemorySplit,
    MemorySuperseded,
    MemoryWritten,
    ProfileUpdated,
    ProxyTurn,
    RecallUsed,
    RollbackUndone,
    SubjectErased,
)
from .queries import TrustQueries
from .rows import SCHEMA, TrustParams


class TrustProjection(TrustQueries):
    name = "trust"
    schema = SCHEMA
    # 2: restores take a forget's signal back; 3: ... by cancelling it, an undone rollback
    # returns its agent to where it stood, and admin keys act with the user's standing
    schema_version = 3
    folds = (
        MemoryWritten,
        MemorySuperseded,
        MemoryEdited,
        MemoryDeduplicated,
        MemorySplit,
        MemoryImported,
        MemoryFlagged,
        RecallUsed,
        ChainForgotten,
        ChainRestored,
        SubjectErased,
        CaptureDecided,
        ContextInjected,
        ProxyTurn,
        AgentSignal,
        AgentRolledBack,
        RollbackUndone,
        AgentKeyAdded,
        ProfileUpdated,
        DocumentIngested,
    )

    def __init__(self, path: Path, params: TrustParams | None = None) -> None:
        self._touched: set[str] = set()  # agents whose evidence this batch changed
        super().__init__(path, params)

    def _open(self) -> sqlite3.Connection:
        conn = super()._open()
        # Folded with other weights: start again, so every score is of the weights in force.
        row = conn.execute("SELECT value FROM meta WHERE key = 'trust_params'").fetchone()
        if row is not None and row[0] != self.params.fingerprint():
            conn.close()
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self._path}{suffix}").unlink(missing_ok=True)
            conn = super()._open()
        conn.execute(
            "INSERT OR REPLACE INTO meta VALUES ('trust_params', ?)", (self.params.fingerprint(),)
        )
        return conn

    # --- the fold --------------------------------------------------------------------------

    def _fold(self, stored: StoredRecord) -> bool:
        record = stored.record
        actor = record.actor.agent_id
        seq, ts = stored.seq, record.ts
        match record.event:
            case MemoryWritten() as e:
                self._version(e.version_id, e.memory_id, actor, seq, [actor])
                self._wrote(actor, seq, ts)
            case MemorySuperseded() | MemoryEdited() as e:
                before = self._sources(e.supersedes_version_id)
                self._version(e.version_id, e.memory_id, actor, seq, [actor, *before])
                # A rollback gives an agent's earlier version back: not a write of its own.
                if getattr(e, "rollback_id", None) is None:
                    self._contradicts(actor, e.supersedes_version_id, e.memory_id, seq, ts)
                    self._wrote(actor, seq, ts)
            case MemoryDeduplicated() as e:
                self._wrote(actor, seq, ts)
                self._confirms(actor, e.version_id, e.memory_id, seq, ts)
            case MemorySplit() as e:
                before = self._sources(e.source_version_id)
                self._version(e.version_id, e.memory_id, actor, seq, [actor, *before])
                flags = self._flags_of(e.source_version_id)
                if flags:
                    self._conn.execute(
                        "UPDATE trust_versions SET flags = ? WHERE version_id = ?",
                        (json.dumps(flags), e.version_id),
                    )
            case MemoryImported() as e:
                sources = [actor]
                if e.origin is not None and e.origin.agent_id:
                    sources.append(e.origin.agent_id)
                if e.version > 1:
                    sources += self._sources(self._latest(e.memory_id) or "")
                self._version(e.version_id, e.memory_id, actor, seq, sources)
            case MemoryFlagged() as e:
                self._conn.execute(
                    "UPDATE trust_versions SET flags = ? WHERE version_id = ?",
                    (json.dumps(e.reasons), e.version_id),
                )
                self._flagged(actor, seq, ts, e.memory_id, e.version_id)
            case RecallUsed() as e:
                self._used(actor, e.memory_ids, e.version_ids, seq, ts)
            case ChainForgotten() as e:
                self._removed(actor, e.memory_id, "forgotten", seq, ts)
            case ChainRestored() as e:
                self._restored(actor, e.memory_id, seq, ts)
            case SubjectErased() as e:
                if e.scope == "memory" and e.memory_id is not None:
                    self._removed(actor, e.memory_id, "erased", seq, ts)
            case CaptureDecided() as e:
                for version_id in e.written:
                    self._conn.execute(
                        "UPDATE trust_versions SET captured = 1"
                        " WHERE version_id = ? AND agent_id = ?",
                        (version_id, actor),
                    )
            case ContextInjected() as e:
                self._conn.executemany(
                    "INSERT OR IGNORE INTO trust_injected VALUES (?, ?)",
                    [(e.trace_id, v) for v in e.version_ids],
                )
            case ProxyTurn() as e:
                self._saved_in_turn(actor, e)
            case AgentSignal() as e:
                evidence = e.weight if e.signal == "positive" else -e.weight
                if e.signal != "neutral":
                    evidence *= self._trust_now(actor)
                    self._signal(
                        e.agent_id, e.label or "feedback", evidence, seq, ts, actor, e.memory_id
                    )
            case ProfileUpdated(flags=[_, *_]) | DocumentIngested(flags=[_, *_]):
                # Text a prompt may carry, flagged: charged as a flagged memory is.
                self._flagged(actor, seq, ts)
            case AgentKeyAdded(admin=True) as e:
                # An admin key acts for the user: from its making on, with the user's standing.
                self._conn.execute("INSERT OR IGNORE INTO trust_users VALUES (?)", (e.agent_id,))
                self._users = self._users | {e.agent_id}
                self.changes += 1
            case AgentRolledBack() as e:
                # Appended last, after one event per item it undid: where the agent stood
                # before the first of them.
                drafts = len(e.forgotten) + len(e.reverted) + len(e.restored)
                drafts += len(e.reforgotten) + len(e.profiles) + len(e.documents)
                got, lost = self._evidence_before(e.agent_id, seq - drafts)
                self._conn.execute(
                    "INSERT OR REPLACE INTO trust_rollbacks VALUES (?, ?, ?, ?, ?)",
                    (e.rollback_id, e.agent_id, seq, got, lost),
                )
            case RollbackUndone() as e:
                if not e.skipped:  # a partial undo keeps what its restores cancelled
                    drafts = len(e.restored) + len(e.forgotten) + len(e.reverted)
                    drafts += len(e.profiles) + len(e.documents)
                    self._undone(e.rollback_id, seq - drafts, seq, ts, actor)
        return False

    def _flagged(
        self,
        actor: str,
        seq: int,
        ts: int,
        memory_id: str | None = None,
        version_id: str | None = None,
    ) -> None:
        if not self.is_user(actor):
            self._agent(actor, seq)
            self._conn.execute(
                "UPDATE trust_agents SET flagged = flagged + 1 WHERE agent_id = ?", (actor,)
            )
        self._signal(actor, "flagged", -self.params.flagged, seq, ts, None, memory_id, version_id)

    def _evidence_before(self, agent: str, seq: int) -> tuple[float, float]:
        """The agent's evidence after its last signal before ``seq``."""
        row = self._conn.execute(
            "SELECT evidence_for, evidence_against FROM trust_signals"
            " WHERE agent_id = ? AND seq < ? ORDER BY id DESC LIMIT 1",
            (agent, seq),
        ).fetchone()
        return (0.0, 0.0) if row is None else (float(row[0]), float(row[1]))

    def _undone(self, rollback_id: str, first: int, seq: int, ts: int, by: str) -> None:
        """The agent of an undone rollback back where it stood before it, with the signals
        it got between the rollback and its undo (for other acts) weighed in again."""
        row = self._conn.execute(
            "SELECT agent_id, seq, evidence_for, evidence_against FROM trust_rollbacks"
            " WHERE rollback_id = ?",
            (rollback_id,),
        ).fetchone()
        if row is None:
            return
        agent, rolled_back, got, lost = str(row[0]), int(row[1]), float(row[2]), float(row[3])
        keep = self.params.forgetting
        for (weight,) in self._conn.execute(
            "SELECT weight FROM trust_signals WHERE agent_id = ? AND seq > ? AND seq < ?"
            " ORDER BY id",
            (agent, rolled_back, first),
        ).fetchall():
            got, lost = got * keep + max(weight, 0.0), lost * keep + max(-weight, 0.0)
        self._set_evidence(agent, got, lost, "rollback_undone", 0.0, seq, ts, by)

    def _version(
        self, version_id: str, memory_id: str, writer: str, seq: int, sources: Iterable[str]
    ) -> None:
        self._conn.execute(
            "INSERT OR IGNORE INTO trust_versions (version_id, memory_id, agent_id, seq,"
            " established) VALUES (?, ?, ?, ?, ?)",
            (version_id, memory_id, writer, seq, int(self.is_user(writer))),
        )
        self._conn.executemany(
            "INSERT OR IGNORE INTO trust_sources VALUES (?, ?)",
            [(version_id, agent) for agent in dict.fromkeys(sources)],
        )
        self._conn.execute(
            "INSERT OR REPLACE INTO trust_chains VALUES (?, ?)", (memory_id, version_id)
        )

    def _wrote(self, agent: str, seq: int, ts: int) -> None:
        """Count a write, and signal a burst when this window's count is far above the
        agent's own earlier rate (and at least ``burst_min``)."""
        p = self.params
        self._agent(agent, seq)
        row = self._conn.execute(
            "SELECT writes, first_write_at, window_start, window_writes, window_signalled"
            " FROM trust_agents WHERE agent_id = ?",
            (agent,),
        ).fetchone()
        writes, first, start, in_window, signalled = row
        window = int(p.burst_seconds * 1e9)
        if first is None:
            first = ts
        if start is None or ts >= start + window:
            start, in_window, signalled = ts, 0, 0
        in_window += 1
        earlier = writes + 1 - in_window
        rate = earlier / max(1.0, (start - first) / window)
        burst = not signalled and in_window >= max(p.burst_min, p.burst_factor * rate)
        self._conn.execute(
            "UPDATE trust_agents SET writes = writes + 1, first_write_at = ?, window_start = ?,"
            " window_writes = ?, window_signalled = ? WHERE agent_id = ?",
            (first, start, in_window, int(signalled or burst), agent),
        )
        if burst:
            self._signal(agent, "burst", -p.burst, seq, ts)

    def _contradicts(self, agent: str, replaced: str, memory_id: str, seq: int, ts: int) -> None:
        row = self._conn.execute(
            "SELECT agent_id, established FROM trust_versions WHERE version_id = ?", (replaced,)
        ).fetchone()
        if row is None or row[0] == agent or not row[1]:
            return
        self._signal(
            agent, "contradiction", -self.params.contradiction, seq, ts, row[0], memory_id, replaced
        )

    def _confirms(self, agent: str, version_id: str, memory_id: str, seq: int, ts: int) -> None:
        row = self._conn.execute(
            "SELECT agent_id, flags FROM trust_versions WHERE version_id = ?", (version_id,)
        ).fetchone()
        # Agreeing with flagged text, or with oneself, is no evidence of anything.
        if row is None or row[0] == agent or row[1] is not None:
            return
        self._conn.execute(
            "UPDATE trust_versions SET established = 1 WHERE version_id = ?", (version_id,)
        )
        if self._once(f"consistent|{memory_id}|{agent}"):
            self._signal(
                agent,
                "consistent",
                self.params.consistent,
                seq,
                ts,
                row[0],
                memory_id,
                version_id,
            )

    def _used(
        self, user: str, memory_ids: Sequence[str], version_ids: Sequence[str], seq: int, ts: int
    ) -> None:
        weight = self.params.used * self._trust_now(user)
        for memory_id, version_id in zip(memory_ids, version_ids, strict=False):
            row = self._conn.execute(
                "SELECT agent_id FROM trust_versions WHERE version_id = ?", (version_id,)
            ).fetchone()
            if row is None or row[0] == user:
                continue
            self._conn.execute(
                "UPDATE trust_versions SET established = 1 WHERE version_id = ?", (version_id,)
            )
            if self._once(f"used|{version_id}|{user}"):
                self._signal(row[0], "used", weight, seq, ts, user, memory_id, version_id)

    def _removed(self, remover: str, memory_id: str, kind: str, seq: int, ts: int) -> None:
        latest = self._latest(memory_id)
        if latest is None:
            return
        row = self._conn.execute(
            "SELECT agent_id FROM trust_versions WHERE version_id = ?", (latest,)
        ).fetchone()
        if row is None or row[0] == remover or not self._once(f"removed|{memory_id}"):
            return
        weight = -self.params.removed * self._trust_now(remover)
        self._signal(row[0], kind, weight, seq, ts, remover, memory_id, latest)

    def _restored(self, restorer: str, memory_id: str, seq: int, ts: int) -> None:
        """Take back the signal of the forget a restore undoes (not the writer's own restore:
        an agent may not win back what another's forget cost it)."""
        row = self._conn.execute(
            "SELECT agent_id, kind, weight, version_id FROM trust_signals"
            " WHERE memory_id = ? AND kind IN ('forgotten', 'restored')"
            " ORDER BY id DESC LIMIT 1",
            (memory_id,),
        ).fetchone()
        if row is None or row[1] != "forgotten" or row[0] == restorer:
            return
        self._conn.execute("DELETE FROM trust_once WHERE what = ?", (f"removed|{memory_id}",))
        agent, weight = str(row[0]), float(row[2])
        # The forget's evidence is cancelled, not outweighed by as much evidence in favour:
        # what is left of it after the signals since (each weighs earlier evidence by
        # ``forgetting``, this one too) leaves the evidence against.
        (since,) = self._conn.execute(
            "SELECT count(*) FROM trust_signals WHERE agent_id = ? AND id > ("
            "SELECT max(id) FROM trust_signals WHERE memory_id = ? AND kind = 'forgotten')",
            (agent, memory_id),
        ).fetchone()
        left = -weight * self.params.forgetting ** (int(since) + 1)
        got, lost = self._evidence(agent)
        keep = self.params.forgetting
        self._set_evidence(
            agent,
            got * keep,
            max(lost * keep - left, 0.0),
            "restored",
            left,
            seq,
            ts,
            restorer,
            memory_id,
            str(row[3]) if row[3] is not None else None,
        )

    def _saved_in_turn(self, agent: str, turn: ProxyTurn) -> None:
        """A fact the model saved in a turn derives from what the turn showed it."""
        saved = [v for r in turn.rounds for v in r.saved]
        if not saved:
            return
        shown = [
            r[0]
            for r in self._conn.execute(
                "SELECT version_id FROM trust_injected WHERE turn_id = ?", (turn.turn_id,)
            )
        ]
        inherited = {a for v in shown for a in self._sources(v)}
        for version_id in saved:
            if self._writer(version_id) == agent and version_id not in shown:
                self._conn.executemany(
                    "INSERT OR IGNORE INTO trust_sources VALUES (?, ?)",
                    [(version_id, a) for a in sorted(inherited)],
                )

    def _signal(
        self,
        agent: str,
        kind: str,
        evidence: float,
        seq: int,
        ts: int,
        by: str | None = None,
        memory_id: str | None = None,
        version_id: str | None = None,
    ) -> None:
        if self.is_user(agent) or evidence == 0:
            return
        self._agent(agent, seq)
        got, lost = self._evidence(agent)
        keep = self.params.forgetting
        got, lost = got * keep, lost * keep
        if evidence > 0:
            got += evidence
        else:
            lost -= evidence
        self._set_evidence(agent, got, lost, kind, evidence, seq, ts, by, memory_id, version_id)

    def _set_evidence(
        self,
        agent: str,
        got: float,
        lost: float,
        kind: str,
        weight: float,
        seq: int,
        ts: int,
        by: str | None = None,
        memory_id: str | None = None,
        version_id: str | None = None,
    ) -> None:
        """The agent's evidence is now ``got`` for and ``lost`` against, by a signal of
        ``kind`` (``weight``: the evidence it stated, signed)."""
        trust = self.params.mean(got, lost)
        self._conn.execute(
            "UPDATE trust_agents SET evidence_for = ?, evidence_against = ?,"
            " signals = signals + 1, positive = positive + ?, negative = negative + ?,"
            " last_signal_seq = ? WHERE agent_id = ?",
            (got, lost, int(weight > 0), int(weight < 0), seq, agent),
        )
        self._conn.execute(
            "INSERT INTO trust_signals (seq, at, agent_id, kind, weight, trust, by_agent,"
            " memory_id, version_id, evidence_for, evidence_against)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (seq, ts, agent, kind, weight, trust, by, memory_id, version_id, got, lost),
        )
        self._touched.add(agent)

    def _agent(self, agent: str, seq: int) -> None:
        self._conn.execute(
            "INSERT OR IGNORE INTO trust_agents (agent_id, first_seq) VALUES (?, ?)",
            (agent, seq),
        )
        self._touched.add(agent)

    def _evidence(self, agent: str) -> tuple[float, float]:
        row = self._conn.execute(
            "SELECT evidence_for, evidence_against FROM trust_agents WHERE agent_id = ?",
            (agent,),
        ).fetchone()
        return (0.0, 0.0) if row is None else (row[0], row[1])

    def _trust_now(self, agent: str) -> float:
        """An agent's trust inside the fold (the batch's own signals included)."""
        if self.is_user(agent):
            return 1.0
        return self.params.mean(*self._evidence(agent))

    def _once(self, what: str) -> bool:
        """True the first time ``what`` is asked: a signal given once only."""
        return (
            self._conn.execute("INSERT OR IGNORE INTO trust_once VALUES (?)", (what,)).rowcount > 0
        )

    def _sources(self, version_id: str) -> list[str]:
        return [
            r[0]
            for r in self._conn.execute(
                "SELECT agent_id FROM trust_sources WHERE version_id = ?", (version_id,)
            )
        ]

    def _latest(self, memory_id: str) -> str | None:
        row = self._conn.execute(
            "SELECT latest_version_id FROM trust_chains WHERE memory_id = ?", (memory_id,)
        ).fetchone()
        return None if row is None else str(row[0])

    def _writer(self, version_id: str) -> str | None:
        row = self._conn.execute(
            "SELECT agent_id FROM trust_versions WHERE version_id = ?", (version_id,)
        ).fetchone()
        return None if row is None else str(row[0])

    def _flags_of(self, version_id: str) -> list[str]:
        row = self._conn.execute(
            "SELECT flags FROM trust_versions WHERE version_id = ?", (version_id,)
        ).fetchone()
        return [] if row is None or row[0] is None else list(json.loads(row[0]))

    def reset(self) -> None:
        super().reset()
        self._load(None)

    def _committed(self) -> None:
        touched, self._touched = self._touched, set()
        self._load(touched)

    def _rolled_back(self) -> None:
        self._touched = set()
        self._load(None)
