"""Writes decided and submitted but not yet durable, and what each write gets back."""

from __future__ import annotations

import time
from concurrent.futures import Future
from itertools import accumulate
from typing import Literal

import msgspec

from ...eventlog import Appended, StoredRecord
from ..record import Recorder
from ..timings import NO_TIMINGS, StageTimings
from .gate import Gate

Status = Literal["created", "superseded", "deduplicated"]


class WriteOutcome(msgspec.Struct, frozen=True, kw_only=True):
    memory_id: str
    version_id: str
    version: int
    status: Status
    similarity: float | None = None
    seq: int = 0
    possibly_updates: str | None = None  # the memory a new chain was linked to
    # The memory newer in fact time that a back-dated write was linked under (it stays served).
    possibly_outdated_by: str | None = None
    reason: str | None = None  # the judgement's code, for a supersede or a link
    flags: tuple[str, ...] = ()  # the poisoning detector's reasons, when it flagged the text


class Decided(msgspec.Struct, frozen=True, kw_only=True):
    """One container's writes, decided under its lock and submitted."""

    group: int  # which group of the call they are
    container_tag: str
    token: object  # their heads' hold on the gate, released when they land
    append: Future[Appended]
    outcomes: list[WriteOutcome]  # without their seqs yet
    counts: list[int]  # how many events each write appended


class SubmittedGroups:
    """Writes decided and submitted by ``Writes.submit_groups``, not yet durable."""

    def __init__(
        self,
        results: list[list[WriteOutcome] | Exception],
        *,
        recorder: Recorder,
        gate: Gate,
        timings: StageTimings = NO_TIMINGS,
    ) -> None:
        self._results = results
        self._recorder = recorder
        self._gate = gate
        self.decided: list[Decided] = []
        # The time each stage took, from the call's start: embed, decide, then ``durable``
        # (the append made durable and applied) when ``finish`` returns.
        self._timings = timings
        self._clock = time.perf_counter()
        self._ms: dict[str, float] = {}

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self._ms[stage] = round((now - self._clock) * 1000, 3)
        self._clock = now

    def finish(self) -> list[list[WriteOutcome] | Exception]:
        """Wait until the appends are durable and applied; each group's outcomes or error."""
        results = self._results
        try:
            last = 0
            appended: list[StoredRecord] = []
            for decided in self.decided:
                n = decided.group
                try:
                    done = decided.append.result()
                except Exception as exc:
                    results[n] = exc
                    continue
                seqs = done.seqs
                appended.extend(done.records)
                last = max(last, seqs[-1])
                # Each outcome's seq is that of the first event its write appended.
                firsts = [seqs[at] for at in accumulate(decided.counts[:-1], initial=0)]
                results[n] = [
                    msgspec.structs.replace(o, seq=seq)
                    for o, seq in zip(decided.outcomes, firsts, strict=True)
                ]
            if last:
                appended.sort(key=lambda r: r.seq)
                self._recorder.apply(last, appended)
                self.lap("durable")
                self._timings.observe("write", self._ms)
        finally:
            self.abandon()
        return results

    def abandon(self) -> None:
        """Drop the in-flight heads (after ``finish``, or when it will never run)."""
        for decided in self.decided:
            self._gate.land(decided.container_tag, decided.token)
