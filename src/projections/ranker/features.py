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

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from ...eventlog.events import Candidate
from . import kernels

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
# The latest recalls with feedback a container's histories keep: every recall compares its
# head with each of them, so this bounds the stage's cost in a container used for years
# (``histories.py``); older feedback lives on in the trained weights only.
WINDOW = 2048

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


def head_pool(candidates: Iterable[Candidate]) -> frozenset[str]:
    """The ``HEAD`` best candidates a recall ranked (before the ranker), by version id."""
    ranked = sorted(
        [(-c.score, c.version_id) for c in candidates if not c.below_floor and not c.below_trust]
    )
    return frozenset(version for _, version in ranked[:HEAD])


def candidate_features(
    candidates: Sequence[Candidate],
    sums: npt.NDArray[np.float64],
    observed_at: Sequence[int | None],
    trust: Sequence[float],
    now_ns: int,
) -> npt.NDArray[np.float64]:
    """One row per candidate, in the order given (the order before the ranker), from each
    one's record summed over the earlier recalls like this one (``histories.Histories.sums``:
    seen, expected, used, closest, graded, grades)."""
    feature_rows = kernels.compiled()[2]
    return feature_rows(
        np.array([c.fused for c in candidates], dtype=np.float64),
        np.array([now_ns if a is None else a for a in observed_at], dtype=np.int64),
        now_ns,
        sums,
        np.asarray(trust, dtype=np.float64),
    )
