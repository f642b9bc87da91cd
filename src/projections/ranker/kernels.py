"""The learned stage's loops, compiled: a recall's record sums (``histories.Histories.sums``),
its candidates' features (``features.candidate_features``) and the model's scores of them
(``model.Model.score``).

Each recall runs them over its container's histories: find the earlier recalls alike to it
from the rows holding its head's memories, sum the entries said in them by candidate, and turn
the sums into features. The data is small (tens to a few thousand entries) and the arithmetic
trivial, so written as array operations the time went to two dozen numpy calls' overhead, not
to the work. Numba compiles these loops once (cached on disk beside this module, or in the
user's cache where that is not writable) and a call costs a few microseconds.

They add in the order the entries are kept (alike rows ascending, a row's entries in the order
they were taken), so a rebuild that keeps the same histories computes the same bits. The plain
Python functions are the definitions (``math.log1p`` is the C library's, as numpy's is except
on a CPU with AVX-512, where numpy's own is one unit in the last place off for some values);
the compiled ones are made from them on first use (``compiled``), so importing this module
does not import numba.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeAlias, cast

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]

# An entry's columns in ``Histories``: who said it of which version, where it was shown, and
# what was said.
AGENT, POSITION, VERSION = range(3)
USED, GRADED, GRADE = range(3)
NONE = -1  # the end of a chain; no candidate
NS_PER_DAY = 86_400 * 1_000_000_000


def gather(
    slots: Ints,
    head_len: int,
    posting_rows: Ints,
    posting_start: Ints,
    posting_count: Ints,
    head_sizes: Ints,
    rows: int,
    first: Ints,
    following: Ints,
    ints: Ints,
    index: Ints,
    agents: int,
    alike: float,
    columns: Ints,
    whose: Ints,
    likeness: Floats,
) -> tuple[int, Ints, int]:
    """The entries of a recall's candidates said in earlier recalls alike to it.

    ``slots`` holds the version slots of the recall's head (its first ``head_len``), then of
    its candidates; slot 0 is a version in no record. The rows sharing a memory with the head
    are counted from each of its memories' postings (``postings.Postings``); a row is alike
    when the Jaccard overlap of the two heads is at least ``alike``. Writes each such entry's
    column, its candidate (an index among the candidates' slots) and the likeness of the
    recall it was said in to the first places of ``columns``, ``whose`` and ``likeness``, and
    returns how many, the agent slots present among them (ascending) and the deepest position
    among them. ``index`` (by version slot) must be all ``NONE``, and is left so."""
    head_slots, candidate_slots = slots[:head_len], slots[head_len:]
    shared = np.zeros(rows, dtype=np.int64)
    for slot in head_slots:
        start = posting_start[slot]
        for j in range(start, start + posting_count[slot]):
            shared[posting_rows[j]] += 1
    for i in range(len(candidate_slots)):
        if candidate_slots[i] > 0:
            index[candidate_slots[i]] = i
    present = np.zeros(agents, dtype=np.bool_)
    gathered = 0
    deepest = 0
    for row in range(rows):
        n = shared[row]
        if n == 0:
            continue
        # Never 0: a union holds at least the recall's own head.
        overlap = n / (head_len + head_sizes[row] - n)
        if overlap < alike:
            continue
        at = first[row]
        while at != NONE:
            candidate = index[ints[VERSION, at]]
            if candidate != NONE:
                columns[gathered] = at
                whose[gathered] = candidate
                likeness[gathered] = overlap
                gathered += 1
                present[ints[AGENT, at]] = True
                deepest = max(deepest, ints[POSITION, at])
            at = following[at]
    for i in range(len(candidate_slots)):
        if candidate_slots[i] > 0:
            index[candidate_slots[i]] = NONE
    return gathered, np.flatnonzero(present).astype(np.int64), deepest


def add_up(
    gathered: int,
    columns: Ints,
    whose: Ints,
    likeness: Floats,
    ints: Ints,
    floats: Floats,
    present: Ints,
    counts: Floats,
    agents: int,
    propensity: Floats,
    candidates: int,
) -> Floats:
    """One row per candidate, the columns of ``histories.SUMS``: each of the first ``gathered``
    entries weighted by its recall's likeness and by whether its agent's feedback counts (1 or
    0 in ``counts``, of the agent slots ``present``); ``propensity`` is the examination
    propensity of each position."""
    counted = np.zeros(agents, dtype=np.float64)
    for k in range(len(present)):
        counted[present[k]] = counts[k]
    found = np.zeros((candidates, 6), dtype=np.float64)
    for k in range(gathered):
        at = columns[k]
        i = whose[k]
        weight = likeness[k] * counted[ints[AGENT, at]]
        used = weight * floats[USED, at]
        found[i, 0] += weight
        found[i, 1] += weight * propensity[ints[POSITION, at]]
        found[i, 2] += used
        found[i, 3] = max(found[i, 3], used)
        found[i, 4] += weight * floats[GRADED, at]
        found[i, 5] += weight * floats[GRADE, at]
    return found


def feature_rows(
    fused: Floats, observed_at: Ints, now_ns: int, sums: Floats, trust: Floats
) -> Floats:
    """``features.candidate_features`` of candidates in a given order, from their fused
    scores, when each was observed, their record sums (``histories.SUMS``) and their writers'
    trust."""
    n = len(fused)
    best = fused.max() if n else 0.0
    if best == 0.0:
        best = 1.0
    rows = np.empty((n, 8), dtype=np.float64)
    for i in range(n):
        seen, expected, used, closest, graded, grades = sums[i]
        rows[i, 0] = fused[i] / best
        rows[i, 1] = math.log1p(float(i))
        rows[i, 2] = math.log1p(seen)
        rows[i, 3] = (used + 0.25) / (expected + 1.0)
        rows[i, 4] = closest
        rows[i, 5] = (grades + 1.5) / (graded + 1.0)
        rows[i, 6] = math.log1p(max(0.0, (now_ns - observed_at[i]) / NS_PER_DAY))
        rows[i, 7] = trust[i]
    return rows


def scores(x: Floats, mean: Floats, scale: Floats, weights: Floats, position: int) -> Floats:
    """``model.Model.score``: each row's standardised features times the weights, summed in
    feature order, less its position feature (a loop, so the same on every machine, where a
    BLAS product's order of addition depends on the processor)."""
    n, width = x.shape
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        total = 0.0
        for k in range(width):
            total += (x[i, k] - mean[k]) / scale[k] * weights[k]
        out[i] = total - x[i, position]
    return out


# The compiled functions take what the plain ones do.
Gather: TypeAlias = Callable[..., tuple[int, Ints, int]]
AddUp: TypeAlias = Callable[..., Floats]
FeatureRows: TypeAlias = Callable[..., Floats]
Scores: TypeAlias = Callable[..., Floats]


_compiled: tuple[Gather, AddUp, FeatureRows, Scores] | None = None


def compiled() -> tuple[Gather, AddUp, FeatureRows, Scores]:
    """``gather``, ``add_up``, ``feature_rows`` and ``scores`` compiled (the first call of each in a
    process compiles it, or loads it from the cache)."""
    global _compiled  # made once per process, on first use
    if _compiled is None:
        import numba  # here: a store without feedback never pays for importing it

        jit = numba.njit(cache=True, nogil=True)
        _compiled = (
            cast(Gather, jit(gather)),
            cast(AddUp, jit(add_up)),
            cast(FeatureRows, jit(feature_rows)),
            cast(Scores, jit(scores)),
        )
    return _compiled


def warm() -> None:
    """Compile (or load) both loops now, on a tiny input: the first recall that needs them
    would otherwise wait for it (a fraction of a second from the cache, seconds without)."""
    gather_compiled, add_up_compiled, feature_rows_compiled, scores_compiled = compiled()
    one = np.zeros(1, dtype=np.int64)
    table = np.full((3, 1), NONE, dtype=np.int64)
    gather_compiled(
        one, 1, one, one, one, one, 0, one, one, table, one, 0, 0.5, one, one, one * 0.0
    )
    add_up_compiled(
        0, one, one, one * 0.0, table, np.zeros((3, 1)), one, one * 0.0, 1, one * 0.0, 1
    )
    features = feature_rows_compiled(np.zeros(1), one, 0, np.zeros((1, 6)), np.zeros(1))
    scores_compiled(features, np.zeros(8), np.ones(8), np.zeros(8), 1)
