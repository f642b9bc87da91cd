"""Scopes: the rows of one recurring label set (a container's live versions) kept together.

An exact scan of a scope gathered its rows out of the index's matrix on every search and every
write decision: for a container of 1,250 versions that copy (1.3 MB) cost more than the scan.
A scope keeps its own contiguous copy and, on each use, is brought up to the label set it is
given: new labels are appended, gone ones swapped out, so a write costs the scope one row
rather than a new gather. What changed is read from the sets' journals when they keep one
(``JournaledSet``: a container's live rows, the index's deleted labels), else found by set
differences (two of them cost 0.3 ms at 10k labels, more than the scan). The label sets given
are the truth; the scope key only says which copy to start from, so a stale or wrong key costs
time, never a wrong answer.

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

from ..journaled import JournaledSet

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
    __slots__ = ("_position", "labels", "matrix", "members", "seen", "size", "waiting")

    def __init__(self, dim: int) -> None:
        self.members: set[int] = set()
        # Labels wanted but not stored in the source yet: looked at again on each use.
        self.waiting: set[int] = set()
        # The sets last brought up to, and their journals' versions then.
        self.seen: tuple[AbstractSet[int], AbstractSet[int], int | None, int | None] | None = None
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
        self, key: Hashable, allowed: AbstractSet[int], deleted: AbstractSet[int], source: Source
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """The labels of ``allowed`` but not ``deleted`` that ``source`` stores, and their
        vectors, as one contiguous matrix; a stored row overwritten since
        (``source.generation``) voids every copy. When both sets keep a journal
        (``JournaledSet``) and are the ones the scope last saw, only the labels they changed
        since are looked at again."""
        if source.generation != self._generation:
            self._scopes.clear()
            self._generation = source.generation
        scope = self._scopes.pop(key, None)
        # Read before the sets: a change made while this runs is looked at again next time.
        stamp = _stamp(allowed), _stamp(deleted)
        if scope is None:
            scope = _Scope(self._dim)
            _gather(scope, _wanted(allowed, deleted), source)
        elif not _caught_up(scope, allowed, deleted, stamp, source):
            wanted = _wanted(allowed, deleted)
            row_of = source.row_of
            new = wanted - scope.members
            added = [label for label in new if label in row_of]
            gone = scope.members - wanted
            if len(added) + len(gone) > REGATHER_SHARE * max(scope.size, 64):
                _gather(scope, wanted, source)
            else:
                for label in gone:
                    scope.drop(label)
                if added:
                    scope.append(added, source.matrix[[row_of[label] for label in added]])
                scope.waiting = {label for label in new if label not in row_of}
        scope.seen = (allowed, deleted, *stamp)
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
    scope.waiting = set(wanted) - scope.members if len(rows) < len(wanted) else set()


def _wanted(allowed: AbstractSet[int], deleted: AbstractSet[int]) -> AbstractSet[int]:
    return allowed - deleted if deleted else frozenset(allowed)


def _stamp(labels: AbstractSet[int]) -> int | None:
    return labels.version if isinstance(labels, JournaledSet) else None


def _caught_up(
    scope: _Scope,
    allowed: AbstractSet[int],
    deleted: AbstractSet[int],
    stamp: tuple[int | None, int | None],
    source: Source,
) -> bool:
    """Bring ``scope`` up to ``allowed`` less ``deleted`` by their journals, if it last saw
    these very sets and both journals reach back to then; else leave it as it was."""
    if scope.seen is None:
        return False
    seen_allowed, seen_deleted, allowed_version, deleted_version = scope.seen
    if seen_allowed is not allowed or seen_deleted is not deleted:
        return False
    if not (isinstance(allowed, JournaledSet) and isinstance(deleted, JournaledSet)):
        return False
    assert allowed_version is not None and deleted_version is not None
    in_allowed = allowed.changed_since(allowed_version)
    in_deleted = deleted.changed_since(deleted_version)
    if in_allowed is None or in_deleted is None:
        return False
    changed = scope.waiting.union(in_allowed, in_deleted)
    if len(changed) > REGATHER_SHARE * max(scope.size, 64):
        return False
    row_of = source.row_of
    added: list[int] = []
    waiting: set[int] = set()
    for label in changed:
        wanted = label in allowed and label not in deleted
        if wanted and label not in scope.members:
            if label in row_of:
                added.append(label)
            else:
                waiting.add(label)
        elif not wanted and label in scope.members:
            scope.drop(label)
    if added:
        scope.append(added, source.matrix[[row_of[label] for label in added]])
    scope.waiting = waiting
    return True
