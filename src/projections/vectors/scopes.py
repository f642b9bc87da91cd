"""Scopes: the rows of one recurring label set (a container's live versions) kept together.

An exact scan of a scope gathered its rows out of the index's matrix on every search and every
write decision: for a container of 1,250 versions that copy (1.3 MB) cost more than the scan.
A scope keeps its own contiguous copy and, on each use, is brought up to the label set it is
given by set differences: new labels are appended, gone ones swapped out, so a write costs the
scope one row rather than a new gather. The label set given is the truth; the scope key only
says which copy to start from, so a stale or wrong key costs time, never a wrong answer.

Rows are compared by label after the scan (best similarity, then smallest label), so their
order inside a scope never shows in a result. Guarded by the caller's lock.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence
from collections.abc import Set as AbstractSet
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

# Rows kept over all scopes (~200 MB of 256-d float32): enough for every container of a
# 100k-memory store, which a round of writes to 8 containers touches in turn. The least
# recently used scopes go first.
SCOPE_CACHE_ROWS = 200_000
# Past this share of its rows changed at once, a scope is gathered again rather than patched.
REGATHER_SHARE = 0.25


class Source(Protocol):
    """The index's matrix of unit vectors, one row per label."""

    matrix: NDArray[np.float32]
    labels: NDArray[np.int64]
    row_of: dict[int, int]
    generation: int  # moves whenever a stored row is overwritten

    def rows_of(self, labels: Sequence[int] | AbstractSet[int]) -> NDArray[np.int64]: ...


class _Scope:
    __slots__ = ("_position", "labels", "matrix", "members", "size")

    def __init__(self, dim: int) -> None:
        self.members: set[int] = set()
        self._position: dict[int, int] | None = None  # label -> row, built on the first drop
        self.labels = np.empty(0, dtype=np.int64)
        self.matrix = np.empty((0, dim), dtype=np.float32)
        self.size = 0

    def fill(self, labels: NDArray[np.int64], matrix: NDArray[np.float32]) -> None:
        self.members = set(labels.tolist())
        self._position = None
        self.labels = labels
        self.matrix = matrix
        self.size = labels.shape[0]

    def drop(self, label: int) -> None:
        if self._position is None:
            self._position = {int(x): n for n, x in enumerate(self.labels[: self.size].tolist())}
        at = self._position.pop(label)
        self.members.discard(label)
        last = self.size - 1
        if at != last:
            moved = int(self.labels[last])
            self.labels[at] = moved
            self.matrix[at] = self.matrix[last]
            self._position[moved] = at
        self.size = last

    def append(self, labels: list[int], vectors: NDArray[np.float32]) -> None:
        needed = self.size + len(labels)
        if needed > self.labels.shape[0]:
            capacity = max(needed, 2 * self.labels.shape[0], 64)
            matrix = np.empty((capacity, self.matrix.shape[1]), dtype=np.float32)
            matrix[: self.size] = self.matrix[: self.size]
            grown = np.empty(capacity, dtype=np.int64)
            grown[: self.size] = self.labels[: self.size]
            self.matrix, self.labels = matrix, grown
        self.matrix[self.size : needed] = vectors
        self.labels[self.size : needed] = labels
        if self._position is not None:
            for n, label in enumerate(labels, start=self.size):
                self._position[label] = n
        self.members.update(labels)
        self.size = needed


class Scopes:
    """Scopes by key, least recently used first out, within ``SCOPE_CACHE_ROWS`` rows."""

    def __init__(self, dim: int, *, max_rows: int = SCOPE_CACHE_ROWS) -> None:
        self._dim = dim
        self._max_rows = max_rows
        self._scopes: OrderedDict[Hashable, _Scope] = OrderedDict()
        self._generation = -1

    def clear(self) -> None:
        self._scopes.clear()

    def rows(
        self, key: Hashable, wanted: AbstractSet[int], source: Source
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """The labels of ``wanted`` that ``source`` stores and their vectors, as one contiguous
        matrix; a stored row overwritten since (``source.generation``) voids every copy."""
        if source.generation != self._generation:
            self._scopes.clear()
            self._generation = source.generation
        scope = self._scopes.pop(key, None)
        if scope is None:
            scope = _Scope(self._dim)
            _gather(scope, wanted, source)
        else:
            row_of = source.row_of
            added = [label for label in wanted - scope.members if label in row_of]
            gone = scope.members - wanted
            if len(added) + len(gone) > REGATHER_SHARE * max(scope.size, 64):
                _gather(scope, wanted, source)
            else:
                for label in gone:
                    scope.drop(label)
                if added:
                    scope.append(added, source.matrix[[row_of[label] for label in added]])
        self._scopes[key] = scope
        self._evict()
        return scope.labels[: scope.size], scope.matrix[: scope.size]

    def _evict(self) -> None:
        total = sum(s.size for s in self._scopes.values())
        while total > self._max_rows and len(self._scopes) > 1:
            _, oldest = self._scopes.popitem(last=False)
            total -= oldest.size


def _gather(scope: _Scope, wanted: AbstractSet[int], source: Source) -> None:
    rows = source.rows_of(wanted)
    scope.fill(source.labels[rows], source.matrix[rows])
