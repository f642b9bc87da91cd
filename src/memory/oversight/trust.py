"""Per-agent trust: the posterior the trust projection folds, enforced and explained.

An agent whose trust is under the threshold may not write or delete: every service that
appends a change asks ``refuse_distrusted`` first, before it embeds, decides or destroys a
key, so a refusal appends nothing. The user (``local``) and the server's own names are never
refused. Reads are never refused: a distrusted agent may still recall, and what it recalls
shows each memory's source and trust.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from ...errors import AgentDistrusted
from ...eventlog import Actor, EventLog
from ...eventlog.scratch import new_scratch
from ...projections.runner import ProjectionRunner
from ...projections.trust.projection import TrustProjection
from ...projections.trust.rows import AgentScore, Carried, SignalRow, TrustParams
from ...settings import Settings


def trust_params(settings: Settings) -> TrustParams:
    return TrustParams(
        prior_alpha=settings.trust_prior_alpha,
        prior_beta=settings.trust_prior_beta,
        forgetting=settings.trust_forgetting,
        used=settings.trust_weight_used,
        consistent=settings.trust_weight_consistent,
        contradiction=settings.trust_weight_contradiction,
        flagged=settings.trust_weight_flagged,
        burst=settings.trust_weight_burst,
        removed=settings.trust_weight_removed,
        burst_seconds=settings.trust_burst_seconds,
        burst_min=settings.trust_burst_min,
        burst_factor=settings.trust_burst_factor,
    )


class Trust:
    def __init__(self, projection: TrustProjection, *, threshold: float) -> None:
        self.projection = projection
        self.threshold = threshold

    @property
    def params(self) -> TrustParams:
        return self.projection.params

    def refuse_distrusted(self, actor: Actor) -> None:
        """Raise ``AgentDistrusted`` if ``actor``'s agent may not change anything now."""
        agent = actor.agent_id
        if self.projection.is_user(agent):
            return
        trust = self.projection.trust_of(agent)
        if trust < self.threshold:
            raise AgentDistrusted(
                f"agent {agent!r} has trust {trust:.3f}, under the threshold {self.threshold}:"
                f" its writes and deletes are refused (GET /agents/{agent} shows why)"
            )

    def distrusted(self, agent: str) -> bool:
        return (
            not self.projection.is_user(agent) and self.projection.trust_of(agent) < self.threshold
        )

    def trust_of(self, agent: str) -> float:
        return self.projection.trust_of(agent)

    def flagged_versions(self) -> frozenset[str]:
        return self.projection.flagged_versions()

    def carried(self, version_ids: Sequence[str]) -> dict[str, Carried]:
        return self.projection.carried(version_ids)

    def score(self, agent: str) -> AgentScore:
        return self.projection.score(agent)

    def scores(self) -> list[AgentScore]:
        return self.projection.scores()

    def signals(self, agent: str, *, limit: int, before_seq: int | None = None) -> list[SignalRow]:
        return self.projection.signals(agent, limit=limit, before_seq=before_seq)

    def versions_written(self, agent: str) -> int:
        return self.projection.versions_written(agent)


def scores_at(log: EventLog, scratch: Path, seq: int, params: TrustParams) -> list[AgentScore]:
    """Every agent's trust as it stood at ``seq``: the trust projection folded again, in a
    scratch folder of the data dir, up to it."""
    folder = new_scratch(scratch)
    try:
        projection = TrustProjection(folder / "trust.sqlite3", params)
        try:
            ProjectionRunner(log, [projection]).sync_to(seq)
            return projection.scores()
        finally:
            projection.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
