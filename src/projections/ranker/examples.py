"""Labelled recalls, and the training pairs drawn from them.

A recall that got feedback is an example: the features of the results it served (as logged,
in the order shown), where each was shown and where it ranked before exploration, and what
the feedback said. Only served results are labelled: a candidate never shown says nothing. A
result used is preferred to one served and not used; an explicit grade outranks a lower grade
and any result served and not used (a grade of 0 or 1 is a "not this"). A pair learned from a
use is weighted by the inverse propensity of the position it was used at; a pair from an
explicit grade is not (the grader looked at it). Every pair is weighted by the standing of the
agent who gave the feedback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import msgspec
import numpy as np

from .features import FEATURES
from .model import Pairs
from .propensity import Propensity, Shown

USED_GRADE = 2  # a use counts as "useful" on the explicit 0..3 scale


class Example(msgspec.Struct, kw_only=True):
    recall_id: str
    container_tag: str | None
    seq: int  # the recall's
    features: list[list[float]]  # one row per served result, in the order shown
    base: list[int]  # each one's rank before exploration (1-based)
    used: dict[int, str] = {}  # served index -> the agent who said it was used
    examined: dict[str, None] = {}  # agents who said which results they used (none, too)
    grades: dict[int, tuple[int, str]] = {}  # served index -> (grade, agent)

    def shown(self) -> Iterable[Shown]:
        """What exploration estimates propensities from: every result of a recall with a
        use event, whether used or not."""
        if not self.examined:
            return
        for i, base in enumerate(self.base):
            yield Shown(base=base, position=i + 1, used=i in self.used)


def counted_only(example: Example, standing: Callable[[str], float]) -> Example:
    """The example with only the feedback of agents whose feedback counts (standing > 0)."""
    return msgspec.structs.replace(
        example,
        used={i: a for i, a in example.used.items() if standing(a) > 0.0},
        examined={a: None for a in example.examined if standing(a) > 0.0},
        grades={i: g for i, g in example.grades.items() if standing(g[1]) > 0.0},
    )


def pairs_of(
    examples: Iterable[Example],
    propensity: Propensity,
    standing: Callable[[str], float],
) -> Pairs:
    """Every preference the examples state, with its weight; pairs of zero weight (feedback
    of an agent not in good standing) are left out."""
    rows: list[list[float]] = []
    better: list[int] = []
    worse: list[int] = []
    weight: list[float] = []
    for example in examples:
        labels = _labels(example)
        if not labels:
            continue
        offset = len(rows)
        rows.extend(example.features)
        for i, (grade_i, agent_i, explicit_i) in labels.items():
            trust = standing(agent_i)
            if trust <= 0.0:
                continue
            ipw = 1.0 if explicit_i else propensity.weight(i + 1)
            for j in range(len(example.features)):
                grade_j = labels[j][0] if j in labels else 0
                if j != i and grade_i > grade_j:
                    better.append(offset + i)
                    worse.append(offset + j)
                    weight.append(trust * ipw)
    width = len(FEATURES)
    return Pairs(
        x=np.asarray(rows, dtype=np.float64).reshape(-1, width),
        better=np.asarray(better, dtype=np.int64),
        worse=np.asarray(worse, dtype=np.int64),
        weight=np.asarray(weight, dtype=np.float64),
    )


def _labels(example: Example) -> dict[int, tuple[int, str, bool]]:
    """served index -> (grade, agent, explicit): explicit grades over uses."""
    labels: dict[int, tuple[int, str, bool]] = {
        i: (USED_GRADE, agent, False) for i, agent in example.used.items()
    }
    for i, (grade, agent) in example.grades.items():
        labels[i] = (grade, agent, True)
    return labels
