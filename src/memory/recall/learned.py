"""The learned stage of recall: the served order's head reordered by the ranker model a
container's feedback trained, and a small logged exploration.

It runs last, on the order every other rule produced (fusion, floor, trust, forgotten and
superseded filters, rerank, diversity, recency, links), and only reorders the first ``HEAD``
of it: it never adds or hides a memory. Its inputs are logged with the recall (each served
candidate's features, each scored candidate's score, the model's digest, the swap), so a replay
ranks the trace again exactly and the ranker's examples are what was served.

Exploration: in ``EXPLORE`` of the recalls of an agent that has told which results it used in
this container, one adjacent pair of the top five trades places, chosen from the recall id (so
a replay makes the same choice). The swaps are what the examination propensities are estimated
from (``projections/ranker/propensity.py``); an agent that never gives feedback is never
explored on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence

import msgspec

from ...eventlog.events import Candidate, LearnedRanking
from ...projections.ranker.features import FEATURES, HEAD, candidate_features, head_pool
from ...projections.ranker.model import Model
from ...projections.ranker.projection import RankerProjection
from ...projections.ranker.propensity import EXPLORED
from ...projections.ranker.propensity import NONE as NO_CORRECTION
from ...projections.trust.projection import TrustProjection
from ...projections.trust.rows import Carried
from .messages import AsRanked

__all__ = ["EXPLORE", "FEATURES", "LearnedStage", "Standing", "logged"]

EXPLORE = 0.05  # the share of an agent's recalls explored, once it gives feedback
# Whose feedback a history counts: an agent under this trust, quarantined or rolled back
# counts for nothing (``Standing``).
TRUST_FLOOR = 0.5


class Learned(msgspec.Struct, kw_only=True):
    order: list[int]
    features: dict[int, list[float]]  # label -> its features (the head's), as computed
    scores: dict[int, float]  # label -> the model's score (the head's, with a model)
    digest: str | None
    explore: int | None


class Standing:
    """The weight of an agent's feedback now: its trust, or 0 when under ``TRUST_FLOOR``,
    quarantined or rolled back.

    Kept per agent until any trust changes or the agents set aside do: a recall asks it of
    every agent in its head's records, and those change far less often than recalls run."""

    def __init__(self, trust: TrustProjection | None, held: Callable[[], frozenset[str]]) -> None:
        self._trust = trust
        self._held = held
        # (trust changes, agents set aside, standing by agent), replaced whole: a thread
        # never reads standings under another state's labels.
        self._known: tuple[int, frozenset[str], dict[str, float]] = (-1, frozenset(), {})

    def __call__(self, agent: str) -> float:
        (value,) = self.of_many([agent])
        return value

    def of_many(self, agents: Sequence[str]) -> list[float]:
        """Each agent's standing, read at once."""
        held = self._held()
        # Read before the trusts are: a change made after this is seen at the next call.
        changes = 0 if self._trust is None else self._trust.changes
        at, aside, known = self._known
        if at != changes or aside is not held:
            known = {}
            self._known = (changes, held, known)
        missing = [a for a in agents if a not in known]
        if missing:
            trusts = [1.0] * len(missing) if self._trust is None else self._trust.trusts_of(missing)
            for a, t in zip(missing, trusts, strict=True):
                known[a] = 0.0 if a in held or t < TRUST_FLOOR else t
        return [known[a] for a in agents]


class LearnedStage:
    def __init__(
        self,
        ranker: RankerProjection,
        trust: TrustProjection | None,
        standing: Standing,
    ) -> None:
        self.ranker = ranker
        self._trust = trust
        self._standing = standing
        self._digests: dict[Model, str] = {}  # of the models served lately: a digest is a hash

    @staticmethod
    def head(limit: int) -> int:
        """How many of the order the stage reorders."""
        return max(HEAD, limit)

    def runs(self, container_tag: str, as_ranked: AsRanked | None) -> bool:
        """Whether the stage has anything to do in a recall of this container: a model to
        rank with, or feedback given there. Nobody has said what helped in a container
        without either: no model, nothing to explore, and features logged now would label
        nothing, so a store without feedback pays nothing more (not even a trace stage)."""
        return self._model(container_tag, as_ranked) is not None or self.ranker.has_feedback(
            container_tag
        )

    def apply(
        self,
        *,
        order: list[int],
        candidates: dict[int, Candidate],
        observed: dict[int, int],
        reference: int,
        carried: Mapping[str, Carried],
        container_tag: str,
        agent: str,
        recall_id: str,
        limit: int,
        as_ranked: AsRanked | None,
    ) -> Learned:
        """``order`` with its head reordered by the serving model (or ``as_ranked``'s), then
        perhaps one adjacent pair of the served top five swapped."""
        model = self._model(container_tag, as_ranked)
        head = order[: self.head(limit)]
        pool = head_pool(candidates.values())
        rows = [candidates[label] for label in head]
        version_ids = [c.version_id for c in rows]
        # Uses are weighed by the examination propensity the model was trained with.
        digest = None if model is None else self._digest(model)
        propensity = NO_CORRECTION if digest is None else self.ranker.propensity_of(digest)
        sums = self.ranker.record_sums(
            container_tag, version_ids, pool, self._counted, propensity.of
        )
        prior = self._trust.params.prior_mean if self._trust is not None else 1.0
        trust = [c.trust if (c := carried.get(v)) is not None else prior for v in version_ids]
        x = candidate_features(
            rows, sums, [observed.get(label) for label in head], trust, reference
        )
        reordered = list(order)
        scores: dict[int, float] = {}
        if model is not None:
            values = model.score(x).tolist()
            scores = {label: round(v, 9) for label, v in zip(head, values, strict=True)}
            ranked = sorted(range(len(head)), key=lambda i: (-values[i], i))
            reordered = [head[i] for i in ranked] + order[len(head) :]
        # A swap needs two served results: the pool may be shorter than the limit.
        servable = min(limit, len(reordered))
        explore = self._explore(agent, container_tag, recall_id, servable, as_ranked)
        if explore is not None and explore < servable:
            k = explore - 1
            reordered[k], reordered[k + 1] = reordered[k + 1], reordered[k]
        return Learned(
            order=reordered,
            features=dict(zip(head, x.tolist(), strict=True)),
            scores=scores,
            digest=digest,
            explore=explore,
        )

    def _digest(self, model: Model) -> str:
        digest = self._digests.get(model)
        if digest is None:
            if len(self._digests) >= 64:  # models are replaced; the old ones are let go
                self._digests.clear()
            digest = self._digests[model] = model.digest
        return digest

    def _counted(self, agents: Sequence[str]) -> list[bool]:
        """Whether each agent's feedback counts now."""
        return [w > 0.0 for w in self._standing.of_many(agents)]

    def _model(self, container_tag: str | None, as_ranked: AsRanked | None) -> Model | None:
        if as_ranked is not None:
            return None if as_ranked.digest is None else self.ranker.model(as_ranked.digest)
        return self.ranker.serving(container_tag)

    def _explore(
        self,
        agent: str,
        container_tag: str | None,
        recall_id: str,
        servable: int,
        as_ranked: AsRanked | None,
    ) -> int | None:
        if as_ranked is not None:
            return as_ranked.explore
        if (
            container_tag is None
            or servable < 2
            or not self.ranker.gives_feedback(agent, container_tag)
        ):
            return None
        draw = int.from_bytes(hashlib.sha256(recall_id.encode()).digest()[:8], "big")
        if (draw % 1_000_000) / 1_000_000 >= EXPLORE:
            return None
        return 1 + (draw // 1_000_000) % (min(EXPLORED, servable) - 1)


def logged(learned: Learned, served: list[int], version_of: dict[int, str]) -> LearnedRanking:
    """What a recall logs of its learned stage: the features of what it served, the score of
    each candidate the model reordered."""
    return LearnedRanking(
        # Rounded as logged, and only what is logged: Python's ``round`` is exact in decimal.
        features={
            version_of[r]: [round(v, 9) for v in learned.features[r]]
            for r in served
            if r in learned.features
        },
        scores={version_of[r]: score for r, score in learned.scores.items()},
    )
