"""How the similarity thresholds are derived for an embedder: rules stated as quantiles of
labelled data, so each model gets its own values and none is carried over from another.

Cosines are not comparable across models: e5-small-v2 puts an unrelated pair near 0.7 and a
paraphrase near 0.9, MiniLM the same pairs near 0.1 and 0.7. A threshold is therefore a
position in a model's own distribution of labelled pairs (``tests/data/write_pairs``), and
``bench/calibrate.py`` computes it per model:

- **the recall floor**: the cosine that only ``FLOOR_UNRELATED_SHARE`` of unrelated pairs (two
  texts of different labelled pairs) reach. A candidate no keyword search found is served only
  above it: below, it is no closer to the query than one random stored text in ten is.
- **the supersede gate** (``same``): the cosine that only ``SAME_UNRELATED_SHARE`` of unrelated
  pairs reach. The word rules decide what is the same fact; the gate only keeps unrelated
  texts away from them.
- **the link gate** (``possible``): the lowest cosine at which no more than
  ``POSSIBLE_DISTINCT_SHARE`` of the pairs labelled distinct would be linked (those the word
  rules leave unsure and that reach it). A link is a guess on similarity alone.

The shares were set so that the rules give back, within a step, the values MiniLM shipped with
and was measured on (floor 0.25, gates 0.5 and 0.75); they are then applied to every model.
Pure: cosines in, thresholds out. ``tests/memory/test_calibration.py`` re-derives every
shipped value from the real models and holds the tables to them.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np

FLOOR_UNRELATED_SHARE = 0.10
SAME_UNRELATED_SHARE = 0.003
POSSIBLE_DISTINCT_SHARE = 0.10
# A derived value is rounded to this step: the labelled set is a few hundred pairs, so finer
# digits would be noise, and a threshold must not move with a re-run on another CPU.
STEP = 0.05


class Thresholds(msgspec.Struct, frozen=True, kw_only=True):
    floor: float  # recall: cosine under which a candidate without a keyword match is not served
    same: float  # write decision: cosine a pair must reach to be judged the same fact
    possible: float  # write decision: cosine a pair must reach to be linked as a possible update


def rounded(value: float) -> float:
    """``value`` to the nearest ``STEP``."""
    return round(round(value / STEP) * STEP, 2)


def derive(
    unrelated: Sequence[float], distinct_unsure: Sequence[float], distinct_count: int
) -> Thresholds:
    """The thresholds for one model, from the cosines of its labelled pairs: unrelated pairs,
    and the pairs labelled distinct that its word rules leave unsure (of ``distinct_count``
    pairs labelled distinct in all)."""
    if not unrelated or distinct_count < 1:
        raise ValueError("unrelated and distinct pairs are needed to derive the thresholds")
    allowed = int(POSSIBLE_DISTINCT_SHARE * distinct_count)  # links to distinct pairs allowed
    ranked = sorted(distinct_unsure, reverse=True)
    # The gate sits just above the first unsure distinct pair past the allowance.
    possible = ranked[allowed] + 1e-9 if allowed < len(ranked) else -1.0
    return Thresholds(
        floor=rounded(float(np.quantile(unrelated, 1.0 - FLOOR_UNRELATED_SHARE))),
        same=rounded(float(np.quantile(unrelated, 1.0 - SAME_UNRELATED_SHARE))),
        possible=rounded(possible),
    )


# The values this build ships, per embedder identity name, each derived by the rules above
# (``bench/calibrate.py``, dev pairs). An embedder missing here has no thresholds: boot refuses
# it rather than guess.
SHIPPED: dict[str, Thresholds] = {
    "e5-small-v2-int8": Thresholds(floor=0.8, same=0.85, possible=0.9),
    "e5-small-v2-int8-static256": Thresholds(floor=0.35, same=0.5, possible=0.75),
    "all-MiniLM-L6-v2-int8": Thresholds(floor=0.25, same=0.5, possible=0.7),
    "all-MiniLM-L6-v2-int8-static256": Thresholds(floor=0.3, same=0.5, possible=0.7),
}


def thresholds_for(embedder_name: str) -> Thresholds:
    """The shipped thresholds of an embedder, by its identity's name."""
    found = SHIPPED.get(embedder_name)
    if found is None:
        raise ValueError(f"no thresholds are derived for the embedder {embedder_name!r}")
    return found
