"""Each memory's record in earlier recalls, kept so that a recall sums it with array operations.

A version's record holds, per agent, the latest ``KEPT`` recalls that agent examined it in (by
recall id): where it was shown, whether it was used, the grade given. A recall's learned stage
needs, for each of its candidates, sums over those records weighted by how alike each earlier
recall is to it (``features.py``). Only earlier recalls of nearly the same question are alike
(their heads share at least half their memories), and they are few: so every entry is a column
of two arrays, kept by the earlier recall it was said in, and a recall finds the alike ones from
their heads (one row of version slots each), gathers only their entries and sums them by
candidate, in a fixed number of numpy calls whatever its candidates' records hold. A
container's histories keep its latest ``WINDOW`` recalls with feedback, so that work has a
ceiling.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from .features import ALIKE, HEAD, KEPT, WINDOW

# The sums ``features.py`` turns into a candidate's features, in this order.
SUMS: tuple[str, ...] = ("seen", "expected", "used", "closest", "graded", "grades")

# The rows of an entry's columns: where it was said, and what was said.
_ROW, _AGENT, _POSITION, _VERSION = range(4)
_USED, _GRADED, _GRADE = range(3)


class Histories:
    """Every version's record in one container's latest ``WINDOW`` recalls with feedback, by
    agent. Not thread-safe: its owner holds a lock.

    The recalls' heads are rows of a ring: when a recall past ``WINDOW`` gets its first
    feedback, it takes the oldest one's row, and the entries said in that one are dropped. So
    a recall compares its head with at most ``WINDOW`` earlier ones, however long the
    container has been used."""

    def __init__(self) -> None:
        self._version_slots: dict[str, int] = {}  # from 1: slot 0 is a version in no head
        self._postings: dict[int, list[int]] = {}  # version slot -> the rows whose head holds it
        # The same as arrays, made when read: a memory's rows change far less often than
        # recalls read them.
        self._posting_arrays: dict[int, npt.NDArray[np.int64]] = {}
        self._index = np.full(64, -1, dtype=np.int64)  # by version slot; set only within a call
        self._agent_slots: dict[str, int] = {}
        self._agents: list[str] = []
        self._recall_rows: dict[str, int] = {}
        self._made = 0  # rows ever taken; row ``made % WINDOW`` is the next
        self._row_recall: list[str] = []  # row -> the recall holding it
        self._row_columns: list[dict[int, None]] = []  # row -> its entries' columns, in turn
        self._row_arrays: dict[int, npt.NDArray[np.int64]] = {}  # the same, made when read
        self._row_slots: list[list[int]] = []  # row -> its head's version slots
        self._head_sizes = np.zeros(64, dtype=np.int64)
        # Every entry: (row, agent slot, position, version slot) and (used, graded, grade).
        self._ints = np.zeros((4, 256), dtype=np.int64)
        self._floats = np.zeros((3, 256), dtype=np.float64)
        self._columns = 0  # columns ever taken; the dropped ones are reused from ``_free``
        self._free: list[int] = []
        # (version slot, agent slot) -> {row: column}, oldest first: its latest ``KEPT``.
        self._kept: dict[tuple[int, int], dict[int, int]] = {}
        self._examined: dict[Callable[[int], float], npt.NDArray[np.float64]] = {}

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
            self._floats[_USED, at] = 1.0
        if grade is not None:
            self._floats[_GRADED:, at] = (1.0, grade)

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
        found = np.zeros((len(distinct), len(SUMS)), dtype=np.float64)
        likeness = self._likeness(head)
        alike = np.flatnonzero(likeness).tolist()
        if not alike:  # a question nobody asked before: the common case
            return np.zeros((len(version_ids), len(SUMS)), dtype=np.float64)
        made = self._row_arrays
        columns = np.concatenate(
            [a if (a := made.get(r)) is not None else self._row_array(r) for r in alike]
        )
        slots = [self._version_slots.get(v, 0) for v in distinct]
        index = self._index
        index[slots] = np.arange(len(distinct))
        index[0] = -1  # a version in no recall's record
        try:
            whose = index[self._ints[_VERSION, columns]]
        finally:
            index[slots] = -1
        columns = columns[whose >= 0]
        whose = whose[whose >= 0]
        if len(columns):
            rows, agents, positions, _ = self._ints[:, columns]
            said = self._floats[:, columns]
            # Each agent's standing is asked once, only of the agents in these entries.
            present = np.flatnonzero(np.bincount(agents)).tolist()
            counted = np.zeros(len(self._agents), dtype=np.float64)
            counted[present] = counts([self._agents[a] for a in present])
            weight = likeness[rows] * counted[agents]
            propensity = self._propensities(examined, int(positions.max()))
            n = len(distinct)
            found[:, 0] = np.bincount(whose, weight, n)
            found[:, 1] = np.bincount(whose, weight * propensity[positions], n)
            used = weight * said[_USED]
            found[:, 2] = np.bincount(whose, used, n)
            np.maximum.at(found[:, 3], whose, used)
            found[:, 4] = np.bincount(whose, weight * said[_GRADED], n)
            found[:, 5] = np.bincount(whose, weight * said[_GRADE], n)
        if len(distinct) == len(version_ids):
            return found
        at = {v: i for i, v in enumerate(distinct)}
        return found[[at[v] for v in version_ids]]

    def _take(self, row: int, key: tuple[int, int], position: int) -> int:
        """A column for a new entry of ``key`` = (version slot, agent slot) in ``row``."""
        if self._free:
            at = self._free.pop()
        else:
            if self._columns == self._ints.shape[1]:
                self._ints = np.concatenate([self._ints, np.zeros_like(self._ints)], axis=1)
                self._floats = np.concatenate([self._floats, np.zeros_like(self._floats)], axis=1)
            at = self._columns
            self._columns += 1
        self._ints[:, at] = (row, key[1], position, key[0])
        self._floats[:, at] = 0.0
        self._row_columns[row][at] = None
        self._row_arrays.pop(row, None)
        return at

    def _drop(self, row: int, at: int) -> None:
        del self._row_columns[row][at]
        self._row_arrays.pop(row, None)
        self._free.append(at)

    def _propensities(
        self, examined: Callable[[int], float], deepest: int
    ) -> npt.NDArray[np.float64]:
        """``examined`` of each position up to ``deepest`` (index 0 unused), kept per function."""
        table = self._examined.get(examined)
        if table is None or len(table) <= deepest:
            table = np.array([0.0] + [examined(p) for p in range(1, max(deepest, HEAD) + 1)])
            self._examined[examined] = table
        return table

    def _likeness(self, head: frozenset[str]) -> npt.NDArray[np.float64]:
        """The Jaccard overlap of every earlier recall's head with ``head``, from ``ALIKE``
        up; under it, 0. Counted from the rows holding each of ``head``'s memories, so only
        the recalls that share one with it are looked at."""
        recalls = len(self._row_recall)
        if not head:
            return np.zeros(recalls)
        slots = [s for v in head if (s := self._version_slots.get(v)) in self._postings]
        if not slots:
            return np.zeros(recalls)
        rows = np.concatenate([self._posting_array(s) for s in slots])
        shared = np.bincount(rows, minlength=recalls)
        # Never 0: a union holds at least ``head``.
        overlap: npt.NDArray[np.float64] = shared / (
            len(head) + self._head_sizes[:recalls] - shared
        )
        overlap[overlap < ALIKE] = 0.0
        return overlap

    def _row_array(self, row: int) -> npt.NDArray[np.int64]:
        found = self._row_arrays.get(row)
        if found is None:
            found = self._row_arrays[row] = np.fromiter(self._row_columns[row], dtype=np.int64)
        return found

    def _posting_array(self, slot: int) -> npt.NDArray[np.int64]:
        found = self._posting_arrays.get(slot)
        if found is None:
            found = self._posting_arrays[slot] = np.array(self._postings[slot], dtype=np.int64)
        return found

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
            self._row_columns.append({})
        self._recall_rows[recall_id] = row
        if row == len(self._head_sizes):
            self._head_sizes = np.concatenate([self._head_sizes, np.zeros_like(self._head_sizes)])
        slots = [self._version_slot(v) for v in sorted(head)][:HEAD]
        if row == len(self._row_slots):
            self._row_slots.append(slots)
        else:
            self._row_slots[row] = slots
        self._head_sizes[row] = len(slots)
        for slot in slots:
            self._postings.setdefault(slot, []).append(row)
            self._posting_arrays.pop(slot, None)
        return row

    def _retire(self, row: int) -> None:
        """The recall holding ``row`` is forgotten, with every entry said in it."""
        del self._recall_rows[self._row_recall[row]]
        for slot in self._row_slots[row]:
            rows = self._postings[slot]
            self._posting_arrays.pop(slot, None)
            rows.remove(row)
            if not rows:
                del self._postings[slot]
        for at in self._row_columns[row]:
            key = (int(self._ints[_VERSION, at]), int(self._ints[_AGENT, at]))
            kept = self._kept[key]
            del kept[row]
            if not kept:
                del self._kept[key]
            self._free.append(at)
        self._row_columns[row] = {}
        self._row_arrays.pop(row, None)

    def _version_slot(self, version: str) -> int:
        slot = self._version_slots.get(version)
        if slot is None:
            slot = self._version_slots[version] = len(self._version_slots) + 1
            if slot == len(self._index):
                self._index = np.concatenate([self._index, np.full_like(self._index, -1)])
        return slot

    def _agent_slot(self, agent: str) -> int:
        slot = self._agent_slots.get(agent)
        if slot is None:
            slot = self._agent_slots[agent] = len(self._agents)
            self._agents.append(agent)
        return slot
