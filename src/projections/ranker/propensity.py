"""How likely a result at each position is to be examined at all, estimated from the recalls
whose order was explored (one adjacent pair swapped within the top five).

An agent uses what it reads, and it reads the top more than the rest: a use at position 1 says
less about the result than a use at position 6. When the results of base ranks k and k+1 trade
places, the change in how often each is used measures ``p(k+1) / p(k)`` without knowing what is
relevant (intervention harvesting, Agarwal et al. 2019). The ratios of the five explored
positions are pooled into one power law ``p(k) = k ** -eta``, which also covers positions no
swap reaches; uses are then weighted by ``1 / p(k)``, clipped so one use never counts more than
``1 / MIN_PROPENSITY``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import msgspec

EXPLORED = 5  # the positions exploration swaps among
MIN_PROPENSITY = 0.1
MAX_ETA = 2.0


class Shown(msgspec.Struct, frozen=True, kw_only=True):
    """One result of a recall that got feedback: its rank without exploration, the position
    it was shown at (both 1-based), and whether it was used."""

    base: int
    position: int
    used: bool


class Propensity(msgspec.Struct, frozen=True, kw_only=True):
    eta: float  # 0: no correction
    swaps: int  # the explored results it was estimated from

    def of(self, position: int) -> float:
        examined: float = position**-self.eta
        return max(MIN_PROPENSITY, examined)

    def weight(self, position: int) -> float:
        return 1.0 / self.of(position)


NONE = Propensity(eta=0.0, swaps=0)


def estimate(shown: Iterable[Shown]) -> Propensity:
    """The exponent that makes the uses most likely, by maximum likelihood over a grid.

    A result of base rank b shown at position k is used with probability ``p(k) * r(b)``,
    ``r(b)`` the unknown usefulness of what ranks b. Results shown at their own place alone
    cannot tell ``p`` from ``r``; the swapped ones can, so without swaps there is no
    correction. For each exponent, each ``r(b)`` takes its own most likely value."""
    counts: dict[tuple[int, int], list[int]] = {}  # (base rank, position) -> [uses, shows]
    swaps = 0
    for s in shown:
        if s.base > EXPLORED:
            continue
        swaps += s.position != s.base
        cell = counts.setdefault((s.base, s.position), [0, 0])
        cell[0] += s.used
        cell[1] += 1
    if swaps == 0:
        return NONE
    best_eta, best = 0.0, -math.inf
    for step in range(int(MAX_ETA * 100) + 1):
        eta = step / 100
        likelihood = _likelihood(counts, eta)
        if likelihood > best + 1e-12:
            best_eta, best = eta, likelihood
    return Propensity(eta=best_eta, swaps=swaps)


def _likelihood(counts: dict[tuple[int, int], list[int]], eta: float) -> float:
    uses_of: dict[int, float] = {}
    exposure_of: dict[int, float] = {}
    for (base, position), (uses, shows) in counts.items():
        uses_of[base] = uses_of.get(base, 0.0) + uses
        exposure_of[base] = exposure_of.get(base, 0.0) + shows * position**-eta
    total = 0.0
    for (base, position), (uses, shows) in counts.items():
        usefulness = min(1.0, uses_of[base] / exposure_of[base])
        p = min(1.0 - 1e-9, max(1e-9, usefulness * position**-eta))
        total += uses * math.log(p) + (shows - uses) * math.log(1.0 - p)
    return total
