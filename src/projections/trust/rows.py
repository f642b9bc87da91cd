"""The trust projection's parameters, tables and row types.

An agent's trust is the mean of a Beta posterior: ``(α₀ + a) / (α₀ + β₀ + a + b)``, where
``a`` and ``b`` are the evidence its signals brought (positive into ``a``, negative into
``b``), each signal first weighing the earlier evidence by ``forgetting``. The prior and the
weights are ``TrustParams``; a projection folded with other ones is refolded.
"""

from __future__ import annotations

import hashlib

import msgspec

from ...settings import Settings

# The user (the unkeyed loopback caller) and the server's own names: fully trusted, never
# scored, never refused.
USER_AGENTS = frozenset({"local", "mnemolog", "replay"})

SIGNAL_KINDS = (
    "used",  # + another agent or the user used a recalled memory it wrote (recall.used)
    "consistent",  # + its write was an exact duplicate of another agent's live memory
    "contradiction",  # - its write superseded another agent's established memory
    "flagged",  # - the poisoning detector flagged its write (memory.flagged)
    "burst",  # - it wrote far more in one window than its own earlier rate
    "forgotten",  # - the user or another agent forgot a memory it wrote
    "erased",  # - the user or another agent erased a memory it wrote
    "feedback",  # +/- an agent.signal event
)


# The defaults are the settings' (``MNEMOLOG_TRUST_*``), declared once in ``settings.py``.
_DEFAULT = Settings()


class TrustParams(msgspec.Struct, frozen=True, kw_only=True):
    prior_alpha: float = _DEFAULT.trust_prior_alpha
    prior_beta: float = _DEFAULT.trust_prior_beta
    forgetting: float = _DEFAULT.trust_forgetting
    used: float = _DEFAULT.trust_weight_used
    consistent: float = _DEFAULT.trust_weight_consistent
    contradiction: float = _DEFAULT.trust_weight_contradiction
    flagged: float = _DEFAULT.trust_weight_flagged
    burst: float = _DEFAULT.trust_weight_burst
    removed: float = _DEFAULT.trust_weight_removed
    burst_seconds: float = _DEFAULT.trust_burst_seconds
    burst_min: int = _DEFAULT.trust_burst_min
    burst_factor: float = _DEFAULT.trust_burst_factor

    @property
    def prior_mean(self) -> float:
        return self.prior_alpha / (self.prior_alpha + self.prior_beta)

    def mean(self, evidence_for: float, evidence_against: float) -> float:
        alpha = self.prior_alpha + evidence_for
        return alpha / (alpha + self.prior_beta + evidence_against)

    def fingerprint(self) -> str:
        return hashlib.sha256(msgspec.json.encode(self)).hexdigest()[:16]


class AgentScore(msgspec.Struct, frozen=True, kw_only=True):
    """An agent's posterior and what went into it."""

    agent_id: str
    trust: float
    alpha: float  # prior alpha + evidence for
    beta: float
    signals: int
    positive: int
    negative: int
    writes: int
    flagged: int
    first_seq: int
    last_signal_seq: int | None
    user: bool = False  # the user or the server itself: not scored


class SignalRow(msgspec.Struct, frozen=True, kw_only=True):
    """One signal: the event that moved an agent's trust, by how much, and the trust after."""

    seq: int
    at: int
    kind: str
    weight: float  # signed evidence: + for, - against (before forgetting)
    trust: float  # the posterior mean after it
    by_agent: str | None  # whose act it was, when not the agent's own
    memory_id: str | None
    version_id: str | None


class Carried(msgspec.Struct, frozen=True, kw_only=True):
    """What a version carries into recall: its writer, the trust of each agent it derives
    from (its sources), the least of them, and its status."""

    version_id: str
    writer: str
    trust: float  # the least trust among its sources: never more than any of them
    sources: tuple[tuple[str, float], ...]  # (agent, trust), least trusted first
    flags: tuple[str, ...] = ()
    captured: bool = False

    @property
    def flagged(self) -> bool:
        return bool(self.flags)


SCHEMA = """
CREATE TABLE IF NOT EXISTS trust_agents (
    agent_id TEXT PRIMARY KEY,
    evidence_for REAL NOT NULL DEFAULT 0,
    evidence_against REAL NOT NULL DEFAULT 0,
    signals INTEGER NOT NULL DEFAULT 0,
    positive INTEGER NOT NULL DEFAULT 0,
    negative INTEGER NOT NULL DEFAULT 0,
    writes INTEGER NOT NULL DEFAULT 0,
    flagged INTEGER NOT NULL DEFAULT 0,
    first_seq INTEGER NOT NULL,
    first_write_at INTEGER,
    window_start INTEGER,
    window_writes INTEGER NOT NULL DEFAULT 0,
    window_signalled INTEGER NOT NULL DEFAULT 0,
    last_signal_seq INTEGER
);
CREATE TABLE IF NOT EXISTS trust_signals (
    id INTEGER PRIMARY KEY,
    seq INTEGER NOT NULL,
    at INTEGER NOT NULL,
    agent_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    weight REAL NOT NULL,
    trust REAL NOT NULL,
    by_agent TEXT,
    memory_id TEXT,
    version_id TEXT,
    evidence_for REAL NOT NULL DEFAULT 0,
    evidence_against REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS trust_signals_by_agent ON trust_signals(agent_id, seq);
-- Where an agent's evidence stood before each rollback of it: its undo returns it there.
CREATE TABLE IF NOT EXISTS trust_rollbacks (
    rollback_id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    evidence_for REAL NOT NULL,
    evidence_against REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS trust_versions (
    version_id TEXT PRIMARY KEY,
    memory_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    flags TEXT,
    captured INTEGER NOT NULL DEFAULT 0,
    established INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS trust_versions_by_agent ON trust_versions(agent_id);
CREATE TABLE IF NOT EXISTS trust_sources (
    version_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    PRIMARY KEY (version_id, agent_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS trust_chains (
    memory_id TEXT PRIMARY KEY,
    latest_version_id TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS trust_once (what TEXT PRIMARY KEY) WITHOUT ROWID;
-- Agents with an admin key: they act for the user, with the user's standing.
CREATE TABLE IF NOT EXISTS trust_users (agent_id TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS trust_injected (
    turn_id TEXT NOT NULL,
    version_id TEXT NOT NULL,
    PRIMARY KEY (turn_id, version_id)
) WITHOUT ROWID;
"""
