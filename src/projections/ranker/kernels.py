"""The two loops of a recall's record sums (``histories.Histories.sums``), compiled.

Each recall runs them over its container's histories: find the earlier recalls alike to it
from the rows holding its head's memories, then sum the entries said in them by candidate.
The data is small (tens to a few thousand entries) and the arithmetic trivial, so written as
array operations the time went to a dozen numpy calls' overhead, not to the work. Numba
compiles these loops once (cached on disk beside this module, or in the user's cache where
that is not writable) and a call costs a few microseconds.

They add in the order the entries are kept (alike rows ascending, a row's entries in the order
they were taken), so a rebuild that keeps the same histories computes the same bits. The plain
Python functions are the definitions; the compiled ones are made from them on first use
(``compiled``), so importing this module does not import numba.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeAlias, cast

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]

# An entry's columns in ``Histories``: where it was said, and what was said.
ROW, AGENT, POSITION, VERSION = range(4)
USED, GRADED, GRADE = range(3)
NONE = -1  # the end of a chain; no candidate


def gather(
    head_slots: Ints,
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
    candidate_slots: Ints,
    agents: int,
    alike: float,
    columns: Ints,
    whose: Ints,
    likeness: Floats,
) -> tuple[int, Ints, int]:
    """The entries of a recall's candidates said in earlier recalls alike to it.

    The rows sharing a memory with the recall's head are counted from each of its memories'
    postings (``postings.Postings``); a row is alike when the Jaccard overlap of the
    two heads is at least ``alike``. Writes each such entry's column, its candidate (an index
    into ``candidate_slots``) and the likeness of the recall it was said in to the first places
    of ``columns``, ``whose`` and ``likeness``, and returns how many, the agent slots present
    among them (ascending) and the deepest position among them. ``index`` (by version slot)
    must be all ``NONE``, and is left so. Slot 0 is a version in no record."""
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
    columns: Ints,
    whose: Ints,
    likeness: Floats,
    ints: Ints,
    floats: Floats,
    counted: Floats,
    propensity: Floats,
    candidates: int,
) -> Floats:
    """One row per candidate, the columns of ``histories.SUMS``: each gathered entry weighted
    by its recall's likeness and whether its agent's feedback counts (``counted``, by agent
    slot); ``propensity`` is the examination propensity of each position."""
    found = np.zeros((candidates, 6), dtype=np.float64)
    for k in range(len(columns)):
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


# The compiled functions take what the plain ones do.
Gather: TypeAlias = Callable[..., tuple[int, Ints, int]]
AddUp: TypeAlias = Callable[..., Floats]


@functools.cache
def compiled() -> tuple[Gather, AddUp]:
    """``gather`` and ``add_up`` compiled (the first call in a process compiles them, or loads
    them from the cache)."""
    import numba  # here: a store without feedback never pays for importing it

    jit = numba.njit(cache=True, nogil=True)
    return cast(Gather, jit(gather)), cast(AddUp, jit(add_up))


def warm() -> None:
    """Compile (or load) both loops now, on a tiny input: the first recall that needs them
    would otherwise wait for it (a fraction of a second from the cache, seconds without)."""
    gather_compiled, add_up_compiled = compiled()
    one = np.zeros(1, dtype=np.int64)
    table = np.full((4, 1), NONE, dtype=np.int64)
    gather_compiled(
        one, 1, one, one, one, one, 0, one, one, table, one, one, 0, 0.5, one, one, np.zeros(1)
    )
    add_up_compiled(
        one[:0], one[:0], np.zeros(0), table, np.zeros((3, 1)), np.zeros(1), np.zeros(1), 1
    )
