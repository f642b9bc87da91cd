"""The one seam through which the domain records what it did: append, then apply.

Every change and every recall is an event appended to the log and then applied to the
projections before its caller is answered, so a client reads its own writes and ``/inspect``
shows a trace as soon as it is answered. ``Recorder.record`` is that pair of steps;
``submit`` and ``apply`` are its two halves, for callers that decide the next batch while the
previous one is made durable.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from typing import Literal, overload

from ..eventlog import Appended, Draft, EventLog, StoredRecord
from ..projections.runner import ProjectionRunner


class Recorder:
    def __init__(self, log: EventLog, runner: ProjectionRunner) -> None:
        self.log = log
        self.runner = runner

    @overload
    def record(self, drafts: Sequence[Draft], *, durable: Literal[True] = True) -> Appended: ...

    @overload
    def record(self, drafts: Sequence[Draft], *, durable: Literal[False]) -> Future[Appended]: ...

    def record(
        self, drafts: Sequence[Draft], *, durable: bool = True
    ) -> Appended | Future[Appended]:
        """Append ``drafts`` atomically. Durable: wait until they are on disk and applied, and
        answer what was appended. Not durable: queue them for the next group commit and
        answer at once with the pending append; they are applied by a later ``apply``."""
        if not durable:
            return self.log.submit(drafts)
        appended = self.log.append(drafts)
        self.apply(appended.seqs[-1], appended.records)
        return appended

    def submit(self, drafts: Sequence[Draft]) -> Future[Appended]:
        """Queue ``drafts`` for the next group commit (the log keeps submission order)."""
        return self.log.submit(drafts)

    def apply(self, seq: int, appended: Sequence[StoredRecord] = ()) -> int:
        """Apply the log to the projections up to ``seq``; ``appended`` are records the
        caller just appended, folded as they are when they are exactly what is missing."""
        return self.runner.sync_to(seq, appended)

    def apply_all(self) -> int:
        """Apply everything the log holds now."""
        return self.runner.sync_to(self.log.head().seq)
