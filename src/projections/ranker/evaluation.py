"""How good an order is, estimated from logged feedback alone (no ground truth).

A result used at the position it was shown is worth ``1 / p(position)`` (inverse propensity:
a use low in the list was made despite few looks), and an order is credited with the DCG@5 of
those worth-weighted uses at the places it would put them. An explicit grade of 2 or 3 counts
as a use, of 0 or 1 as none. On the same examples two orders can be compared pair by pair;
the difference's standard error says whether it is more than chance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec
import numpy as np

from .examples import USED_GRADE, Example
from .model import Model
from .propensity import Propensity

DEPTH = 5


class Comparison(msgspec.Struct, frozen=True, kw_only=True):
    examples: int
    new: float  # mean estimated DCG@5 of the new order
    old: float
    difference: float
    standard_error: float

    @property
    def better(self) -> bool:
        """The new order is ahead by more than twice the standard error of the difference
        (about 97.5% one-sided, under a normal approximation)."""
        return self.examples > 0 and self.difference > 2.0 * self.standard_error

    def figures(self) -> dict[str, float]:
        return {
            "examples": float(self.examples),
            "dcg5New": round(self.new, 6),
            "dcg5Old": round(self.old, 6),
            "difference": round(self.difference, 6),
            "standardError": round(self.standard_error, 6),
        }


def order_of(model: Model | None, example: Example) -> list[int]:
    """The shown results' indexes in the order ``model`` puts them; without a model, in the
    order intended before exploration."""
    if model is None:
        return sorted(range(len(example.base)), key=lambda i: example.base[i])
    scores = model.score(np.asarray(example.features, dtype=np.float64))
    return sorted(range(len(scores)), key=lambda i: (-scores[i], example.base[i]))


def estimated_dcg(example: Example, order: Sequence[int], propensity: Propensity) -> float:
    worth = _worth(example, propensity)
    return sum(worth.get(i, 0.0) / math.log2(rank + 2) for rank, i in enumerate(order[:DEPTH]))


def shown_dcg(example: Example, propensity: Propensity) -> float:
    """The estimated DCG@5 of the order the recall actually showed."""
    return estimated_dcg(example, range(len(example.base)), propensity)


def compare(
    examples: Sequence[Example], new: Model | None, old: Model | None, propensity: Propensity
) -> Comparison:
    differences: list[float] = []
    news: list[float] = []
    olds: list[float] = []
    for example in examples:
        if not _worth(example, propensity):
            continue  # nothing used: every order scores 0, and says nothing
        a = estimated_dcg(example, order_of(new, example), propensity)
        b = estimated_dcg(example, order_of(old, example), propensity)
        news.append(a)
        olds.append(b)
        differences.append(a - b)
    count = len(differences)
    if count == 0:
        return Comparison(examples=0, new=0.0, old=0.0, difference=0.0, standard_error=0.0)
    spread = float(np.std(differences, ddof=1)) if count > 1 else math.inf
    return Comparison(
        examples=count,
        new=float(np.mean(news)),
        old=float(np.mean(olds)),
        difference=float(np.mean(differences)),
        standard_error=spread / math.sqrt(count),
    )


def _worth(example: Example, propensity: Propensity) -> dict[int, float]:
    worth = {i: propensity.weight(i + 1) for i in example.used}
    for i, (grade, _) in example.grades.items():
        if grade >= USED_GRADE:
            worth[i] = 1.0
        else:
            worth.pop(i, None)
    return worth
