"""The projection runner: catches every projection up with the log, in seq order.

Each projection keeps the last seq it applied together with its data, so it resumes where it
stopped; ``rebuild`` wipes it and replays from the first record. The write path calls
``sync_to`` with the seq it just appended before it answers, so clients read their writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol

from ..eventlog import EventLog, StoredRecord
from .rwlock import ReadWriteLock

_BATCH = 512

Progress = Callable[[int, int], None]  # (records applied, records to apply)


class Projection(Protocol):
    name: str

    def last_seq(self) -> int: ...

    def apply(self, records: Sequence[StoredRecord]) -> None:
        """Fold records (in seq order, all after ``last_seq``) and record the new last seq."""
        ...

    def reset(self) -> None:
        """Forget everything: the next apply starts from seq 1."""
        ...

    def close(self) -> None: ...


class ProjectionRunner:
    """Feeds log records to projections; one lock, so records apply once and in order."""

    def __init__(self, log: EventLog, projections: Sequence[Projection]) -> None:
        self._log = log
        self._projections = list(projections)
        # Searches share it (``holding``); applying takes it alone.
        self._lock = ReadWriteLock()

    def catch_up(self, progress: Progress | None = None) -> int:
        """Apply everything the log holds; return the seq every projection has reached.
        ``progress`` is told how many records are applied, of how many, after each batch."""
        return self.sync_to(self._log.head().seq, progress=progress)

    def sync_to(
        self,
        seq: int,
        appended: Sequence[StoredRecord] = (),
        *,
        progress: Progress | None = None,
    ) -> int:
        """Apply the log up to ``seq``. ``appended`` are records the caller just appended, as
        the log returned them: when they are exactly what is missing, they are folded as they
        are instead of being read back and decoded (the write path's case)."""
        with self._lock.writing():
            start = min((p.last_seq() for p in self._projections), default=seq) + 1
            total = max(seq - start + 1, 0)
            batch: list[StoredRecord] = []
            for stored in self._records(start, seq, appended):
                batch.append(stored)
                if len(batch) >= _BATCH:
                    self._apply(batch)
                    batch = []
                    if progress is not None:
                        progress(stored.seq - start + 1, total)
            if batch:
                self._apply(batch)
            if progress is not None and total:
                progress(total, total)
            return min((p.last_seq() for p in self._projections), default=seq)

    def _records(
        self, start: int, seq: int, appended: Sequence[StoredRecord]
    ) -> Iterable[StoredRecord]:
        count = seq - start + 1
        if count <= 0:
            return []
        if appended and appended[0].seq <= start:
            # Where ``start`` would be if ``appended`` had no gap; whether it has one there is
            # checked record by record (several appends may have others' records between them).
            ahead = start - appended[0].seq
            missing = appended[ahead : ahead + count]
            if len(missing) == count and all(r.seq == start + n for n, r in enumerate(missing)):
                return missing
        return self._log.read(start, limit=count)

    def position(self) -> int:
        """The seq every projection has applied: what a reader sees at least."""
        return min((p.last_seq() for p in self._projections), default=0)

    @contextmanager
    def holding(self) -> Iterator[int]:
        """Keep every projection where it stands while the caller reads several of them, and
        give the seq they stand at: what is read inside is the fold of the log up to it, the
        same for each (a batch is applied to all projections or to none). Readers hold it
        together; a batch waits for them to leave (``rwlock.py``)."""
        with self._lock.reading():
            yield self.position()

    def rebuild(self, progress: Progress | None = None) -> int:
        with self._lock.writing():
            for projection in self._projections:
                projection.reset()
        return self.catch_up(progress)

    def close(self) -> None:
        with self._lock.writing():
            for projection in self._projections:
                projection.close()

    def _apply(self, batch: list[StoredRecord]) -> None:
        for projection in self._projections:
            last = projection.last_seq()
            fresh = [r for r in batch if r.seq > last]
            if fresh:
                projection.apply(fresh)
