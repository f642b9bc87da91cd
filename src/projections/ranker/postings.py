"""For each version, the rows (earlier recalls) whose head held it, laid out so that a compiled
loop reads a version's rows in one contiguous pass (``kernels.gather``).

A recall's alike ones are found by counting, over its head's versions, the rows holding each:
read from per-version lists or chains, that was the bulk of a recall's time in the ranker
(scattered reads, a dozen array calls). Here every version's rows are one segment of a single
array, in no particular order (counting does not need one); a segment that fills up moves to
the end with twice the room, and the array is packed again when a move finds no room left.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

_FIRST_ROOM = 4


class Postings:
    """Not thread-safe: its owner holds a lock."""

    def __init__(self, room: int = 1024) -> None:
        self.rows = np.zeros(room, dtype=np.int64)
        self.start = np.zeros(64, dtype=np.int64)  # by version slot: where its segment starts
        self.count = np.zeros(64, dtype=np.int64)  # by version slot: the rows in its segment
        self._room = np.zeros(64, dtype=np.int64)  # by version slot: its segment's length
        self._end = 0  # the first place no segment has taken
        self._held = 0  # the places segments hold (the rest were left behind by moves)

    def reserve(self, slot: int) -> None:
        """Make room for a version slot (slots are numbered in turn)."""
        if slot >= len(self.start):
            more = max(slot + 1, 2 * len(self.start)) - len(self.start)
            self.start, self.count, self._room = (
                np.concatenate([a, np.zeros(more, dtype=np.int64)])
                for a in (self.start, self.count, self._room)
            )

    def add(self, slot: int, row: int) -> None:
        n = int(self.count[slot])
        if n == self._room[slot]:
            self._move(slot, max(_FIRST_ROOM, 2 * n))
        self.rows[self.start[slot] + n] = row
        self.count[slot] = n + 1

    def remove(self, slot: int, row: int) -> None:
        start, n = int(self.start[slot]), int(self.count[slot])
        segment = self.rows[start : start + n]
        (at,) = np.flatnonzero(segment == row)[:1]
        segment[at] = segment[n - 1]
        self.count[slot] = n - 1

    def of(self, slot: int) -> npt.NDArray[np.int64]:
        """The rows holding a version slot (a view; in no particular order)."""
        start = int(self.start[slot])
        return self.rows[start : start + int(self.count[slot])]

    def _move(self, slot: int, room: int) -> None:
        if self._end + room > len(self.rows):
            self._pack(room)
        start, n = int(self.start[slot]), int(self.count[slot])
        self.rows[self._end : self._end + n] = self.rows[start : start + n]
        self._held += room - int(self._room[slot])
        self.start[slot], self._room[slot] = self._end, room
        self._end += room

    def _pack(self, needed: int) -> None:
        """Every segment moved to the front of an array with room for ``needed`` more places:
        what moved segments left behind is taken back."""
        packed = np.zeros(max(len(self.rows), 2 * (self._held + needed)), dtype=np.int64)
        at = 0
        for slot in np.flatnonzero(self._room).tolist():
            start, n = int(self.start[slot]), int(self.count[slot])
            packed[at : at + n] = self.rows[start : start + n]
            self.start[slot] = at
            at += int(self._room[slot])
        self.rows, self._end = packed, at
