"""Each memory's record in earlier recalls, kept so that a recall sums it with array operations.

A version's record holds, per agent, the latest ``KEPT`` recalls that agent examined it in (by
recall id): where it was shown, whether it was used, the grade given. A recall's learned stage
needs, for each of its candidates, sums over those records weighted by how alike each earlier
recall is to it (``features.py``). Summed entry by entry in Python, a head of 20 memories with
full records took over a millisecond; here each version's entries are one small array (built
again only after it changes), each earlier recall's head is a row of version slots, and the
likeness of every earlier recall and the sums of every candidate are a few numpy operations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from .features import ALIKE, HEAD, KEPT

# The columns of a version's entries: the earlier recall's row, the agent's slot, the position
# it was shown at (1-based), whether it was used, its grade (-1: none).
_RECALL, _AGENT, _POSITION, _USED, _GRADE = range(5)
# The sums ``features.py`` turns into a candidate's features, in this order.
SUMS: tuple[str, ...] = ("seen", "expected", "used", "closest", "graded", "grades")


class _Entry:
    __slots__ = ("grade", "position", "used")

    def __init__(self, position: int) -> None:
        self.position = position
        self.used = False
        self.grade = -1


class Histories:
    """Every version's record, by agent. Not thread-safe: its owner holds a lock."""

    def __init__(self) -> None:
        self._version_slots: dict[str, int] = {}  # from 1: slot 0 pads a short head
        self._recall_rows: dict[str, int] = {}
        self._heads = np.zeros((64, HEAD), dtype=np.int64)  # version slots, one row a recall
        self._head_sizes = np.zeros(64, dtype=np.int64)
        self._agent_slots: dict[str, int] = {}
        self._agents: list[str] = []
        # version id -> agent slot -> recall row -> what that agent saw and said of it there
        self._records: dict[str, dict[int, dict[int, _Entry]]] = {}
        self._arrays: dict[str, npt.NDArray[np.int64]] = {}  # built from _records on demand

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
        agent_slot = self._agent_slot(agent)
        by_recall = self._records.setdefault(version, {}).setdefault(agent_slot, {})
        entry = by_recall.get(row)
        if entry is None:
            entry = by_recall[row] = _Entry(position)
            while len(by_recall) > KEPT:
                del by_recall[next(iter(by_recall))]
        entry.used = entry.used or used
        if grade is not None:
            entry.grade = grade
        self._arrays.pop(version, None)

    def sums(
        self,
        version_ids: Sequence[str],
        head: frozenset[str],
        counts: Callable[[str], bool],
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
        entries = np.concatenate(parts)  # each owner's entries in one run, in owner order
        starts = np.cumsum([0] + [len(a) for a in parts[:-1]])
        # Each agent's standing is asked once, only of the agents in these records.
        agent_of = entries[:, _AGENT]
        present = np.flatnonzero(np.bincount(agent_of))
        counted = np.zeros(len(self._agents), dtype=np.float64)
        counted[present] = [counts(self._agents[a]) for a in present]
        positions = entries[:, _POSITION]
        propensity = np.array([0.0] + [examined(p) for p in range(1, int(positions.max()) + 1)])
        # Each earlier recall's likeness once, however many of these versions it showed.
        recall_of = entries[:, _RECALL]
        shown = np.zeros(len(self._recall_rows), dtype=bool)
        shown[recall_of] = True
        rows = np.flatnonzero(shown)
        likeness = np.zeros(len(self._recall_rows), dtype=np.float64)
        likeness[rows] = self._likeness(rows, head)
        alike = likeness[recall_of] * counted[agent_of]
        weighed = np.empty((len(entries), 5), dtype=np.float64)
        weighed[:, 0] = alike
        weighed[:, 1] = alike * propensity[positions]
        weighed[:, 2] = alike * entries[:, _USED]
        grades = entries[:, _GRADE]
        weighed[:, 3] = alike * (grades >= 0)
        weighed[:, 4] = weighed[:, 3] * grades
        summed = np.add.reduceat(weighed, starts, axis=0)
        out[owners] = summed[:, [0, 1, 2, 2, 3, 4]]
        out[owners, 3] = np.maximum.reduceat(weighed[:, 2], starts)
        return out

    def _likeness(
        self, rows: npt.NDArray[np.int64], head: frozenset[str]
    ) -> npt.NDArray[np.float64]:
        """The Jaccard overlap of each earlier recall's head with ``head``, from ``ALIKE`` up;
        under it, 0."""
        member = np.zeros(len(self._version_slots) + 1, dtype=bool)
        member[[s for v in head if (s := self._version_slots.get(v)) is not None]] = True
        member[0] = False  # the padding of a short head
        shared = member[self._heads[rows]].sum(axis=1)
        union = len(head) + self._head_sizes[rows] - shared
        overlap = np.divide(shared, union, out=np.zeros(len(rows)), where=shared > 0)
        return np.where(overlap >= ALIKE, overlap, 0.0)

    def _entries(self, version: str) -> npt.NDArray[np.int64]:
        found = self._arrays.get(version)
        if found is None:
            found = self._arrays[version] = np.array(
                [
                    (row, agent, e.position, e.used, e.grade)
                    for agent, by_recall in self._records[version].items()
                    for row, e in by_recall.items()
                ],
                dtype=np.int64,
            ).reshape(-1, 5)
        return found

    def _recall_row(self, recall_id: str, head: frozenset[str]) -> int:
        row = self._recall_rows.get(recall_id)
        if row is not None:
            return row
        row = self._recall_rows[recall_id] = len(self._recall_rows)
        if row == len(self._heads):
            self._heads = np.concatenate([self._heads, np.zeros_like(self._heads)])
            self._head_sizes = np.concatenate([self._head_sizes, np.zeros_like(self._head_sizes)])
        slots = [self._version_slot(v) for v in sorted(head)][:HEAD]
        self._heads[row, : len(slots)] = slots
        self._head_sizes[row] = len(slots)
        return row

    def _version_slot(self, version: str) -> int:
        slot = self._version_slots.get(version)
        if slot is None:
            slot = self._version_slots[version] = len(self._version_slots) + 1
        return slot

    def _agent_slot(self, agent: str) -> int:
        slot = self._agent_slots.get(agent)
        if slot is None:
            slot = self._agent_slots[agent] = len(self._agents)
            self._agents.append(agent)
        return slot
