"""Each memory's record in earlier recalls, kept so that a recall sums it with array operations.

A version's record holds, per agent, the latest ``KEPT`` recalls that agent examined it in (by
recall id): where it was shown, whether it was used, the grade given. A recall's learned stage
needs, for each of its candidates, sums over those records weighted by how alike each earlier
recall is to it (``features.py``). Summed entry by entry in Python, a head of 20 memories with
full records took over a millisecond; here each version's entries are columns of two small
arrays that a use or a grade writes in place, each earlier recall's head is a row of version
slots, and the likeness of every earlier recall and the sums of every candidate are a few numpy
operations. A container's histories keep its latest ``WINDOW`` recalls with feedback, so that
work has a ceiling.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import accumulate

import numpy as np
import numpy.typing as npt

from .features import ALIKE, HEAD, KEPT, WINDOW

# The sums ``features.py`` turns into a candidate's features, in this order.
SUMS: tuple[str, ...] = ("seen", "expected", "used", "closest", "graded", "grades")


class _Record:
    """One version's entries as columns that grow in place: (recall row, agent slot,
    position) and (used, graded, grade). An agent keeps its latest ``KEPT``; the oldest is
    dropped by moving the last column into its place, so nothing is rebuilt when a use or a
    grade is said."""

    __slots__ = ("column", "floats", "ints", "rows_of", "size")

    def __init__(self) -> None:
        self.column: dict[tuple[int, int], int] = {}  # (agent slot, recall row) -> column
        self.rows_of: dict[int, dict[int, None]] = {}  # agent slot -> its rows, oldest first
        self.ints = np.zeros((3, 4), dtype=np.int64)
        self.floats = np.zeros((3, 4), dtype=np.float64)
        self.size = 0

    def entry(self, agent: int, row: int, position: int) -> int:
        """The column of ``agent``'s entry for recall ``row``, made if new."""
        found = self.column.get((agent, row))
        if found is not None:
            return found
        rows = self.rows_of.setdefault(agent, {})
        rows[row] = None
        if len(rows) > KEPT:
            oldest = next(iter(rows))
            del rows[oldest]
            self._drop(self.column.pop((agent, oldest)))
        if self.size == self.ints.shape[1]:
            self.ints = np.concatenate([self.ints, np.zeros_like(self.ints)], axis=1)
            self.floats = np.concatenate([self.floats, np.zeros_like(self.floats)], axis=1)
        at = self.column[(agent, row)] = self.size
        self.size += 1
        self.ints[:, at] = (row, agent, position)
        self.floats[:, at] = 0.0
        return at

    def forget(self, agent: int, row: int) -> bool:
        """Drop ``agent``'s entry for recall ``row``; False if it was dropped already (an
        agent keeps only its latest ``KEPT``)."""
        at = self.column.pop((agent, row), None)
        if at is None:
            return False
        rows = self.rows_of[agent]
        del rows[row]
        if not rows:
            del self.rows_of[agent]
        self._drop(at)
        return True

    def _drop(self, at: int) -> None:
        last = self.size - 1
        if at != last:
            self.ints[:, at] = self.ints[:, last]
            self.floats[:, at] = self.floats[:, last]
            moved_row, moved_agent = int(self.ints[0, at]), int(self.ints[1, at])
            self.column[(moved_agent, moved_row)] = at
        self.size = last


class Histories:
    """Every version's record in one container's latest ``WINDOW`` recalls with feedback, by
    agent. Not thread-safe: its owner holds a lock.

    The recalls' heads are rows of a ring: when a recall past ``WINDOW`` gets its first
    feedback, it takes the oldest one's row, and the entries said in that one are dropped. So
    a recall compares its head with at most ``WINDOW`` earlier ones, however long the
    container has been used."""

    def __init__(self) -> None:
        self._version_slots: dict[str, int] = {}  # from 1: slot 0 pads a short head
        self._member = np.zeros(64, dtype=bool)  # by version slot; set only within a call
        self._recall_rows: dict[str, int] = {}
        self._made = 0  # rows ever taken; row ``made % WINDOW`` is the next
        self._row_recall: list[str] = []  # row -> the recall holding it
        self._row_entries: list[list[tuple[str, int]]] = []  # row -> (version, agent) said there
        self._heads = np.zeros((64, HEAD), dtype=np.int64)  # version slots, one row a recall
        self._head_sizes = np.zeros(64, dtype=np.int64)
        self._agent_slots: dict[str, int] = {}
        self._agents: list[str] = []
        self._records: dict[str, _Record] = {}
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
        record = self._records.get(version)
        if record is None:
            record = self._records[version] = _Record()
        agent_slot = self._agent_slot(agent)
        if (agent_slot, row) not in record.column:
            self._row_entries[row].append((version, agent_slot))
        at = record.entry(agent_slot, row, position)
        if used:
            record.floats[0, at] = 1.0
        if grade is not None:
            record.floats[1:, at] = (1.0, grade)

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
        n = len(version_ids)
        out = np.zeros((n, len(SUMS)), dtype=np.float64)
        owners = [i for i, v in enumerate(version_ids) if v in self._records]
        if not owners:
            return out
        parts = [self._entries(version_ids[i]) for i in owners]
        # Each owner's entries in one run, in owner order: its run starts where the last ended.
        where = np.concatenate([ints for ints, _ in parts], axis=1)
        said = np.concatenate([floats for _, floats in parts], axis=1)
        starts = list(accumulate([0] + [ints.shape[1] for ints, _ in parts[:-1]]))
        recall_of, agent_of, positions = where
        # Each agent's standing is asked once, only of the agents in these records.
        present = np.flatnonzero(np.bincount(agent_of))
        counted = np.zeros(len(self._agents), dtype=np.float64)
        counted[present] = counts([self._agents[a] for a in present])
        # Every earlier recall's likeness at once: fewer calls than picking those shown.
        alike = self._likeness(head)[recall_of] * counted[agent_of]
        weighed = np.empty((5, len(alike)), dtype=np.float64)
        weighed[0] = alike
        weighed[1] = alike * self._propensities(examined, int(positions.max()))[positions]
        np.multiply(said, alike, out=weighed[2:])  # used, graded, the grades
        summed = np.add.reduceat(weighed, starts, axis=1)
        out[owners] = summed[[0, 1, 2, 2, 3, 4]].T
        out[owners, 3] = np.maximum.reduceat(weighed[2], starts)
        return out

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
        up; under it, 0."""
        recalls = len(self._row_recall)
        if not head:
            return np.zeros(recalls)
        slots = [s for v in head if (s := self._version_slots.get(v)) is not None]
        member = self._member  # slot 0, the padding of a short head, is never set
        member[slots] = True
        try:
            shared = member[self._heads[:recalls]].sum(axis=1)
        finally:
            member[slots] = False
        # Never 0: a union holds at least ``head``.
        overlap: npt.NDArray[np.float64] = shared / (
            len(head) + self._head_sizes[:recalls] - shared
        )
        overlap[overlap < ALIKE] = 0.0
        return overlap

    def _entries(self, version: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """A version's live entries, one column each: (recall row, agent slot, position) and
        (used, graded, grade)."""
        record = self._records[version]
        return record.ints[:, : record.size], record.floats[:, : record.size]

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
            self._row_entries.append([])
        self._recall_rows[recall_id] = row
        if row == len(self._heads):
            self._heads = np.concatenate([self._heads, np.zeros_like(self._heads)])
            self._head_sizes = np.concatenate([self._head_sizes, np.zeros_like(self._head_sizes)])
        slots = [self._version_slot(v) for v in sorted(head)][:HEAD]
        self._heads[row] = 0
        self._heads[row, : len(slots)] = slots
        self._head_sizes[row] = len(slots)
        return row

    def _retire(self, row: int) -> None:
        """The recall holding ``row`` is forgotten, with every entry said in it."""
        del self._recall_rows[self._row_recall[row]]
        for version, agent in self._row_entries[row]:
            record = self._records[version]
            if record.forget(agent, row) and record.size == 0:
                del self._records[version]
        self._row_entries[row] = []

    def _version_slot(self, version: str) -> int:
        slot = self._version_slots.get(version)
        if slot is None:
            slot = self._version_slots[version] = len(self._version_slots) + 1
            if slot == len(self._member):
                self._member = np.concatenate([self._member, np.zeros_like(self._member)])
        return slot

    def _agent_slot(self, agent: str) -> int:
        slot = self._agent_slots.get(agent)
        if slot is None:
            slot = self._agent_slots[agent] = len(self._agents)
            self._agents.append(agent)
        return slot
