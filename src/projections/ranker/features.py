"""What the learned ranker knows of a candidate: the scores its recall logged for it, and its
memory's own record in earlier recalls like this one.

The same function builds the features of a training row and of a live candidate (in recall,
before serving), and a recall logs the features of what it served, so what is learned is what
is applied. A history counts only what the log held before the recall: nothing later leaks in.

Feedback counts by how alike the earlier recall was to this one: the Jaccard overlap of the
two recalls' heads (the first ``HEAD`` candidates before the ranker). It needs no query text or
vector; a question asked again scores near 1, a question of other memories near 0. So a memory
used for one question is not pushed up for every other question: a memory's record weighs
only where the recalls resemble each other, and a new kind of question is ranked by the
logged scores alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import msgspec
import numpy as np
import numpy.typing as npt

from ...eventlog.events import Candidate

# The fusion constant the logged ranks were fused with (``memory/recall/ranking.py``); ranks
# are turned into the same reciprocal shares here.
RRF_K = 8
HEAD = 20  # the candidates the ranker reorders, and the pool a recall is compared by
# Two recalls are alike when they share more of their heads than not (a Jaccard overlap of
# at least 1/2: 14 of 20 candidates). Questions about other facts of the same people share
# some candidates, and counting them taught the ranker each memory's popularity, which put
# popular memories above the answers of new questions.
ALIKE = 0.5
KEPT = 32  # the latest examined recalls a history keeps per agent
_NS_PER_DAY = 86_400 * 1_000_000_000

FEATURES: tuple[str, ...] = (
    "fused",  # the fused score over the recall's best
    "position",  # log(1 + its place in the order before the ranker), 0 = first
    "seen_alike",  # log(1 + the alikeness summed over earlier recalls it was shown in)
    # Its uses there over the uses expected of its places (each alike showing counts the
    # examination propensity of its position): clicks over expected clicks, so a memory
    # shown low and used is not read as less useful than one shown first. Prior 1/4.
    "used_alike",
    "used_closest",  # the alikeness of the most alike earlier recall it was used in
    "grade_alike",  # its explicit grades there, weighted by alikeness (prior 1.5 of 0..3)
    "age",  # log(1 + days between when it was observed and the recall)
    "trust",  # its writer's trust as the recall saw it
)
# The features the model weighs; the others it logs and shows (``model.py`` says why).
LEARNED = frozenset(FEATURES) - {"fused", "position"}


class Seen(msgspec.Struct, kw_only=True):
    """One earlier recall a version was examined in: that recall's head, and what was said."""

    pool: frozenset[str]
    position: int  # where it was shown, 1-based
    used: bool = False
    grade: int | None = None


class History(msgspec.Struct, kw_only=True):
    """One version's record, as given by one agent, up to some point of the log: the latest
    ``KEPT`` recalls that agent examined it in, by recall id."""

    seen: dict[str, Seen] = {}

    def note(self, recall_id: str, pool: frozenset[str], position: int) -> Seen:
        found = self.seen.get(recall_id)
        if found is None:
            found = self.seen[recall_id] = Seen(pool=pool, position=position)
            while len(self.seen) > KEPT:
                del self.seen[next(iter(self.seen))]
        return found


def head_pool(candidates: Iterable[Candidate]) -> frozenset[str]:
    """The ``HEAD`` best candidates a recall ranked (before the ranker), by version id."""
    ranked = sorted(
        (c for c in candidates if not c.below_floor and not c.below_trust),
        key=lambda c: (-c.score, c.version_id),
    )
    return frozenset(c.version_id for c in ranked[:HEAD])


def candidate_features(
    candidates: Sequence[Candidate],
    histories: Sequence[Sequence[History]],
    observed_at: Sequence[int | None],
    trust: Sequence[float],
    now_ns: int,
    pool: frozenset[str],
    examined: Callable[[int], float] = lambda position: 1.0,
) -> npt.NDArray[np.float64]:
    """One row per candidate, in the order given (the order before the ranker); each one's
    histories are those of the agents whose feedback counts."""
    best_fused = max((c.fused for c in candidates), default=0.0) or 1.0
    rows = np.zeros((len(candidates), len(FEATURES)), dtype=np.float64)
    # An earlier recall is in the history of each result it showed: its likeness once.
    likeness: dict[str, float] = {}
    for i, (c, own, at, t) in enumerate(
        zip(candidates, histories, observed_at, trust, strict=True)
    ):
        age = 0.0 if at is None else max(0.0, (now_ns - at) / _NS_PER_DAY)
        seen = expected = used = closest = graded = grades = 0.0
        for history in own:
            for recall_id, s in history.seen.items():
                alike = likeness.get(recall_id)
                if alike is None:
                    alike = likeness[recall_id] = _alike(pool, s.pool)
                seen += alike
                expected += alike * examined(s.position)
                if s.used:
                    used += alike
                    closest = max(closest, alike)
                if s.grade is not None:
                    graded += alike
                    grades += alike * s.grade
        rows[i] = (
            c.fused / best_fused,
            math.log1p(i),
            math.log1p(seen),
            (used + 0.25) / (expected + 1.0),
            closest,
            (grades + 1.5) / (graded + 1.0),
            math.log1p(age),
            t,
        )
    return rows


def _alike(a: frozenset[str], b: frozenset[str]) -> float:
    """The Jaccard overlap of two heads, from ``ALIKE`` up; under it, 0."""
    shared = len(a & b)
    overlap = shared / (len(a) + len(b) - shared) if shared else 0.0
    return overlap if overlap >= ALIKE else 0.0
