"""The reads of the trust projection: each agent's score, its signals, and what a version
carries into recall, under its lock; the scores are also kept in memory, since every write
and recall asks them."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..sqlite import SqliteProjection
from .rows import USER_AGENTS, AgentScore, Carried, SignalRow, TrustParams

_AGENT_COLUMNS = (
    "agent_id, evidence_for, evidence_against, signals, positive, negative, writes, flagged,"
    " first_seq, last_signal_seq"
)


class TrustQueries(SqliteProjection):
    def __init__(self, path: Path, params: TrustParams | None = None) -> None:
        self.params = params or TrustParams()
        self._scores_lock = threading.Lock()
        self._scores: dict[str, tuple[float, float]] = {}
        self._users: frozenset[str] = USER_AGENTS
        # Counts every change of any agent's trust, after the change: whoever keeps trusts read
        # earlier knows when to read them again.
        self.changes = 0
        super().__init__(path)
        self._load(None)

    def is_user(self, agent: str) -> bool:
        """Whether ``agent`` acts with the user's standing (trust 1, never scored): the user,
        the server's own names, and every agent given an admin key."""
        return agent in self._users

    def _load(self, agents: set[str] | None) -> None:
        """Bring the in-memory scores in step with the table (only ``agents``, if given)."""
        with self._lock:
            admins = self._conn.execute("SELECT agent_id FROM trust_users").fetchall()
            self._users = USER_AGENTS | {str(a[0]) for a in admins}
            if agents is None:
                rows = self._conn.execute(
                    "SELECT agent_id, evidence_for, evidence_against FROM trust_agents"
                ).fetchall()
            elif agents:
                marks = ",".join("?" * len(agents))
                rows = self._conn.execute(
                    "SELECT agent_id, evidence_for, evidence_against FROM trust_agents"
                    f" WHERE agent_id IN ({marks})",
                    sorted(agents),
                ).fetchall()
            else:
                return
        with self._scores_lock:
            if agents is None:
                self._scores = {}
            for agent, got, lost in rows:
                self._scores[agent] = (got, lost)
            self.changes += 1

    def trust_of(self, agent: str) -> float:
        """An agent's trust now: the posterior mean (the prior's for an agent never seen)."""
        if self.is_user(agent):
            return 1.0
        with self._scores_lock:
            evidence = self._scores.get(agent)
        return self.params.prior_mean if evidence is None else self.params.mean(*evidence)

    def trusts_of(self, agents: Sequence[str]) -> list[float]:
        """``trust_of`` of each agent, read under one lock."""
        mean, prior, users = self.params.mean, self.params.prior_mean, self._users
        with self._scores_lock:
            found = [self._scores.get(a) for a in agents]
        return [
            1.0 if a in users else prior if e is None else mean(*e)
            for a, e in zip(agents, found, strict=True)
        ]

    def score(self, agent: str) -> AgentScore:
        p = self.params
        with self._lock:
            row = self._conn.execute(
                f"SELECT {_AGENT_COLUMNS} FROM trust_agents WHERE agent_id = ?", (agent,)
            ).fetchone()
        if row is None:
            row = (agent, 0.0, 0.0, 0, 0, 0, 0, 0, 0, None)
        return _score(p, row, self.is_user(agent))

    def scores(self) -> list[AgentScore]:
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_AGENT_COLUMNS} FROM trust_agents ORDER BY first_seq"
            ).fetchall()
        return [_score(self.params, row, self.is_user(str(row[0]))) for row in rows]

    def signals(self, agent: str, *, limit: int, before_seq: int | None = None) -> list[SignalRow]:
        """The signals that moved an agent's trust, newest first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT seq, at, kind, weight, trust, by_agent, memory_id, version_id"
                " FROM trust_signals WHERE agent_id = ? AND seq < ? ORDER BY id DESC LIMIT ?",
                (agent, before_seq if before_seq is not None else 2**62, limit),
            ).fetchall()
        return [
            SignalRow(
                seq=r[0],
                at=r[1],
                kind=r[2],
                weight=r[3],
                trust=r[4],
                by_agent=r[5],
                memory_id=r[6],
                version_id=r[7],
            )
            for r in rows
        ]

    def versions_written(self, agent: str) -> int:
        with self._lock:
            row = self._conn.execute(
                "SELECT count(*) FROM trust_versions WHERE agent_id = ?", (agent,)
            ).fetchone()
        return int(row[0])

    def flagged_versions(self) -> frozenset[str]:
        """Every version the poisoning detector flagged (a handful: flags are rare)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT version_id FROM trust_versions WHERE flags IS NOT NULL"
            ).fetchall()
        return frozenset(row[0] for row in rows)

    def carried(self, version_ids: Sequence[str]) -> dict[str, Carried]:
        """What each version carries into recall (versions this model never saw: none)."""
        wanted = list(dict.fromkeys(version_ids))
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        with self._lock:
            rows = self._conn.execute(
                "SELECT version_id, agent_id, flags, captured FROM trust_versions"
                f" WHERE version_id IN ({marks})",
                wanted,
            ).fetchall()
            sources: dict[str, list[str]] = {}
            for version_id, agent in self._conn.execute(
                f"SELECT version_id, agent_id FROM trust_sources WHERE version_id IN ({marks})",
                wanted,
            ):
                sources.setdefault(version_id, []).append(agent)
        out: dict[str, Carried] = {}
        for version_id, writer, flags, captured in rows:
            agents = sources.get(version_id) or [writer]
            trusted = sorted(((a, self.trust_of(a)) for a in agents), key=lambda x: (x[1], x[0]))
            out[version_id] = Carried(
                version_id=version_id,
                writer=writer,
                trust=trusted[0][1],
                sources=tuple(trusted),
                flags=() if flags is None else tuple(json.loads(flags)),
                captured=bool(captured),
            )
        return out


def _score(p: TrustParams, row: tuple[Any, ...], user: bool) -> AgentScore:
    agent, got, lost, signals, positive, negative, writes, flagged, first, last = row
    return AgentScore(
        agent_id=agent,
        trust=1.0 if user else p.mean(got, lost),
        alpha=p.prior_alpha + got,
        beta=p.prior_beta + lost,
        signals=signals,
        positive=positive,
        negative=negative,
        writes=writes,
        flagged=flagged,
        first_seq=first,
        last_signal_seq=last,
        user=user,
    )
