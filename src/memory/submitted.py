"""Writes decided and submitted but not yet durable, and what each write gets back."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from itertools import accumulate
from typing import Literal

import msgspec

from ..eventlog import Appended, StoredRecord

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


class SubmittedGroups:
    """Writes decided and submitted by ``Writes.submit_groups``, not yet durable."""

    def __init__(
        self,
        results: list[list[WriteOutcome] | Exception],
        *,
        apply: Callable[[int, Sequence[StoredRecord]], object],
        land: Callable[[str, object], None],
    ) -> None:
        self._results = results
        self._apply = apply
        self._land = land
        # (group, container, in-flight token, the append, the outcomes without their seqs,
        # how many events each outcome's write appended)
        self.decided: list[
            tuple[int, str, object, Future[Appended], list[WriteOutcome], list[int]]
        ] = []

    def finish(self) -> list[list[WriteOutcome] | Exception]:
        """Wait until the appends are durable and applied; each group's outcomes or error."""
        results = self._results
        try:
            last = 0
            appended: list[StoredRecord] = []
            for n, _, _, future, outcomes, counts in self.decided:
                try:
                    done = future.result()
                except Exception as exc:
                    results[n] = exc
                    continue
                seqs = done.seqs
                appended.extend(done.records)
                last = max(last, seqs[-1])
                # Each outcome's seq is that of the first event its write appended.
                firsts = [seqs[at] for at in accumulate(counts[:-1], initial=0)]
                results[n] = [
                    msgspec.structs.replace(o, seq=seq)
                    for o, seq in zip(outcomes, firsts, strict=True)
                ]
            if last:
                appended.sort(key=lambda r: r.seq)
                self._apply(last, appended)
        finally:
            self.abandon()
        return results

    def abandon(self) -> None:
        """Drop the in-flight heads (after ``finish``, or when it will never run)."""
        for _, container_tag, token, _, _, _ in self.decided:
            self._land(container_tag, token)
