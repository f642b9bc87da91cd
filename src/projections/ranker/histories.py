"""Each memory's record in earlier recalls, kept so that a recall sums it in compiled loops.

A version's record holds, per agent, the latest ``KEPT`` recalls that agent examined it in (by
recall id): where it was shown, whether it was used, the grade given. A recall's learned stage
needs, for each of its candidates, sums over those records weighted by how alike each earlier
recall is to it (``features.py``). Only earlier recalls of nearly the same question are alike
(their heads share at least half their memories), and they are few: so every entry is a column
of two arrays, chained to the earlier recall it was said in, and a recall finds the alike ones
from the rows holding its head's memories (``postings.py``), gathers only their entries and
sums them by candidate, in two compiled loops (``kernels.py``). A container's histories keep
its latest ``WINDOW`` recalls with feedback, so that work has a ceiling.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain

import numpy as np
import numpy.typing as npt

from . import kernels
from .features import ALIKE, HEAD, KEPT, WINDOW
from .kernels import AGENT, GRADE, GRADED, NONE, USED, VERSION
from .postings import Postings

# The sums ``features.py`` turns into a candidate's features, in this order.
SUMS: tuple[str, ...] = ("seen", "expected", "used", "closest", "graded", "grades")


class Histories:
    """Every version's record in one container's latest ``WINDOW`` recalls with feedback, by
    agent. Not thread-safe: its owner holds a lock.

    The recalls' heads are rows of a ring: when a recall past ``WINDOW`` gets its first
    feedback, it takes the oldest one's row, and the entries said in that one are dropped. So
    a recall compares its head with at most ``WINDOW`` earlier ones, however long the
    container has been used."""

    def __init__(self) -> None:
        self._version_slots: dict[str, int] = {}  # from 1: slot 0 is a version in no head
        self._index = np.full(64, NONE, dtype=np.int64)  # by version slot; set only within a call
        self._postings = Postings()  # version slot -> the rows whose head holds it
        self._agent_slots: dict[str, int] = {}
        self._agents: list[str] = []
        self._recall_rows: dict[str, int] = {}
        self._made = 0  # rows ever taken; row ``made % WINDOW`` is the next
        self._row_recall: list[str] = []  # row -> the recall holding it
        self._row_slots: list[list[int]] = []  # row -> its head's version slots
        self._head_sizes = np.zeros(64, dtype=np.int64)
        # Every entry: (agent slot, position, version slot) and (used, graded, grade).
        self._ints = np.zeros((3, 256), dtype=np.int64)
        self._floats = np.zeros((3, 256), dtype=np.float64)
        # A row's entries are a chain of columns, in the order they were taken: the first and
        # last of each row, and each column's next and previous (``NONE`` ends it).
        self._first = np.full(64, NONE, dtype=np.int64)
        self._last = np.full(64, NONE, dtype=np.int64)
        self._next = np.full(256, NONE, dtype=np.int64)
        self._previous = np.full(256, NONE, dtype=np.int64)
        self._columns = 0  # columns ever taken; the dropped ones are reused from ``_free``
        self._free: list[int] = []
        # (version slot, agent slot) -> {row: column}, oldest first: its latest ``KEPT``.
        self._kept: dict[tuple[int, int], dict[int, int]] = {}
        self._examined: dict[Callable[[int], float], npt.NDArray[np.float64]] = {}
        # What ``kernels.gather`` writes the entries it found into, as long as ``_ints``.
        self._found_columns = np.zeros(256, dtype=np.int64)
        self._found_whose = np.zeros(256, dtype=np.int64)
        self._found_likeness = np.zeros(256, dtype=np.float64)

    def note(
        self,
        version: str,
        agent: str,
        recall_id: str,
        head: frozenset[str],
        position: int,
        *,
        used: bool = False,
        grade: int | None = None,
    ) -> None:
        """An agent examined ``version`` at ``position`` in a recall whose head was ``head``;
        a use is kept once said, a grade replaces the earlier one."""
        row = self._recall_row(recall_id, head)
        key = (self._version_slot(version), self._agent_slot(agent))
        kept = self._kept.setdefault(key, {})
        at = kept.get(row)
        if at is None:
            at = kept[row] = self._take(row, key, position)
            if len(kept) > KEPT:
                oldest = next(iter(kept))
                self._drop(oldest, kept.pop(oldest))
        if used:
            self._floats[USED, at] = 1.0
        if grade is not None:
            self._floats[GRADED, at] = 1.0
            self._floats[GRADE, at] = grade

    def sums(
        self,
        version_ids: Sequence[str],
        head: frozenset[str],
        counts: Callable[[Sequence[str]], Sequence[bool]],
        examined: Callable[[int], float],
    ) -> npt.NDArray[np.float64]:
        """One row per version, the columns of ``SUMS``: over the earlier recalls in its
        record by agents whose feedback ``counts``, each weighted by its likeness to a recall
        whose head is ``head``; ``examined`` gives the propensity of a position."""
        # A version may stand twice in ``version_ids``: both get its sums.
        distinct = list(dict.fromkeys(version_ids))
        if not self._recall_rows:
            return np.zeros((len(version_ids), len(SUMS)), dtype=np.float64)
        slot_of = self._version_slots.get
        gather, add_up, _, _ = kernels.compiled()
        found_columns, found_whose, found_likeness = (
            self._found_columns,
            self._found_whose,
            self._found_likeness,
        )
        gathered, present, deepest = gather(
            np.array([slot_of(v, 0) for v in chain(head, distinct)], dtype=np.int64),
            len(head),
            self._postings.rows,
            self._postings.start,
            self._postings.count,
            self._head_sizes,
            len(self._row_recall),
            self._first,
            self._next,
            self._ints,
            self._index,
            len(self._agents),
            ALIKE,
            found_columns,
            found_whose,
            found_likeness,
        )
        if not gathered:  # no alike recall: the common case for a new question
            return np.zeros((len(version_ids), len(SUMS)), dtype=np.float64)
        # Each agent's standing is asked once, only of the agents in these entries.
        who = present.tolist()
        found = add_up(
            gathered,
            found_columns,
            found_whose,
            found_likeness,
            self._ints,
            self._floats,
            present,
            np.array(counts([self._agents[a] for a in who]), dtype=np.float64),
            len(self._agents),
            self._propensities(examined, deepest),
            len(distinct),
        )
        if len(distinct) == len(version_ids):
            return found
        at = {v: i for i, v in enumerate(distinct)}
        return found[[at[v] for v in version_ids]]

    def _take(self, row: int, key: tuple[int, int], position: int) -> int:
        """A column for a new entry of ``key`` = (version slot, agent slot) in ``row``, last
        in its chain."""
        if self._free:
            at = self._free.pop()
        else:
            if self._columns == self._ints.shape[1]:
                self._ints = np.concatenate([self._ints, np.zeros_like(self._ints)], axis=1)
                self._floats = np.concatenate([self._floats, np.zeros_like(self._floats)], axis=1)
                self._next = np.concatenate([self._next, np.full_like(self._next, NONE)])
                self._previous = np.concatenate(
                    [self._previous, np.full_like(self._previous, NONE)]
                )
                self._found_columns = np.zeros(len(self._next), dtype=np.int64)
                self._found_whose = np.zeros(len(self._next), dtype=np.int64)
                self._found_likeness = np.zeros(len(self._next), dtype=np.float64)
            at = self._columns
            self._columns += 1
        self._ints[:, at] = (key[1], position, key[0])
        self._floats[:, at] = 0.0
        last = int(self._last[row])
        self._previous[at], self._next[at] = last, NONE
        if last == NONE:
            self._first[row] = at
        else:
            self._next[last] = at
        self._last[row] = at
        return at

    def _drop(self, row: int, at: int) -> None:
        """The entry in column ``at`` is unchained from ``row`` and its column freed."""
        before, after = int(self._previous[at]), int(self._next[at])
        if before == NONE:
            self._first[row] = after
        else:
            self._next[before] = after
        if after == NONE:
            self._last[row] = before
        else:
            self._previous[after] = before
        self._free.append(at)

    def _chain(self, row: int) -> list[int]:
        """The columns of ``row``'s entries, in turn."""
        columns = []
        at = int(self._first[row])
        while at != NONE:
            columns.append(at)
            at = int(self._next[at])
        return columns

    def _propensities(
        self, examined: Callable[[int], float], deepest: int
    ) -> npt.NDArray[np.float64]:
        """``examined`` of each position up to ``deepest`` (index 0 unused), kept per function."""
        table = self._examined.get(examined)
        if table is None or len(table) <= deepest:
            table = np.array([0.0] + [examined(p) for p in range(1, max(deepest, HEAD) + 1)])
            self._examined[examined] = table
        return table

    def _recall_row(self, recall_id: str, head: frozenset[str]) -> int:
        row = self._recall_rows.get(recall_id)
        if row is not None:
            return row
        row = self._made % WINDOW
        self._made += 1
        if row < len(self._row_recall):
            self._retire(row)
            self._row_recall[row] = recall_id
        else:
            self._row_recall.append(recall_id)
        self._recall_rows[recall_id] = row
        if row == len(self._head_sizes):
            self._head_sizes = np.concatenate([self._head_sizes, np.zeros_like(self._head_sizes)])
            self._first = np.concatenate([self._first, np.full_like(self._first, NONE)])
            self._last = np.concatenate([self._last, np.full_like(self._last, NONE)])
        slots = [self._version_slot(v) for v in sorted(head)][:HEAD]
        if row == len(self._row_slots):
            self._row_slots.append(slots)
        else:
            self._row_slots[row] = slots
        self._head_sizes[row] = len(slots)
        for slot in slots:
            self._postings.add(slot, row)
        return row

    def _retire(self, row: int) -> None:
        """The recall holding ``row`` is forgotten, with every entry said in it."""
        del self._recall_rows[self._row_recall[row]]
        for slot in self._row_slots[row]:
            self._postings.remove(slot, row)
        for at in self._chain(row):
            key = (int(self._ints[VERSION, at]), int(self._ints[AGENT, at]))
            kept = self._kept[key]
            del kept[row]
            if not kept:
                del self._kept[key]
            self._free.append(at)
        self._first[row] = self._last[row] = NONE

    def _version_slot(self, version: str) -> int:
        slot = self._version_slots.get(version)
        if slot is None:
            slot = self._version_slots[version] = len(self._version_slots) + 1
            if slot == len(self._index):
                self._index = np.concatenate([self._index, np.full_like(self._index, NONE)])
            self._postings.reserve(slot)
        return slot

    def _agent_slot(self, agent: str) -> int:
        slot = self._agent_slots.get(agent)
        if slot is None:
            slot = self._agent_slots[agent] = len(self._agents)
            self._agents.append(agent)
        return slot
