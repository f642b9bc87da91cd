"""What a write decision makes: the events and the answer of each ruling (a new chain, a
version, a link, a back-dated write kept under a newer fact, a duplicate), its evidence sealed
under the key of the memory it belongs to. ``writes.py`` decides; this builds.
"""

from __future__ import annotations

import time
from typing import Literal

import msgspec
import numpy as np
import numpy.typing as npt

from ...clock import parse_instant
from ...eventlog import Sealer
from ...eventlog.events import (
    AnyEvent,
    Evidence,
    MemoryArbitrated,
    MemoryDeduplicated,
    MemoryLinked,
    MemorySuperseded,
    MemoryWritten,
)
from ...eventlog.subjects import container_subject, memory_subject
from ...texts import content_hash
from ..poisoning.rules import Verdict
from .arbiter import Arbitration
from .gate import Head, Heads
from .sameness import Judgement
from .submitted import WriteOutcome
from .versions import NewMemory, new_id, version_fields


class Outcomes:
    """Builds the events of a ruling and notes the chain heads they make in the batch."""

    def __init__(self, sealer: Sealer) -> None:
        self._sealer = sealer

    def created(
        self,
        container_tag: str,
        memory_id: str,
        item: NewMemory,
        digest: str,
        vector: npt.NDArray[np.float32],
        batch: Heads,
    ) -> tuple[list[AnyEvent], WriteOutcome]:
        """A new chain (``memory_id`` taken with its key ready)."""
        version_id = new_id("ver")
        event = MemoryWritten(
            memory_id=memory_id,
            version_id=version_id,
            container_tag=container_tag,
            **version_fields(self._sealer, memory_subject(memory_id), item, vector),
        )
        batch.add(
            Head(
                memory_id,
                version_id,
                1,
                digest,
                vector,
                item.content,
                fact_time(item),
                is_static=item.is_static,
            )
        )
        return [event], WriteOutcome(
            memory_id=memory_id, version_id=version_id, version=1, status="created"
        )

    def linked(
        self, container_tag: str, outcome: WriteOutcome, older: Head, judgement: Judgement
    ) -> tuple[MemoryLinked, WriteOutcome]:
        """The link of a new chain to an older one it may update: both stay served."""
        event = MemoryLinked(
            memory_id=outcome.memory_id,
            version_id=outcome.version_id,
            target_memory_id=older.memory_id,
            target_version_id=older.version_id,
            container_tag=container_tag,
            similarity=judgement.similarity,
            evidence=self.evidence(outcome.memory_id, judgement, "automatic", own_words=True),
        )
        return event, msgspec.structs.replace(
            outcome,
            possibly_updates=older.memory_id,
            similarity=judgement.similarity,
            reason=judgement.reason,
        )

    def outdated(
        self, container_tag: str, outcome: WriteOutcome, newer: Head, judgement: Judgement
    ) -> tuple[MemoryLinked, WriteOutcome]:
        """The link of a new chain under one it may update that states a newer fact: the
        link runs the other way, and the new chain is served below it."""
        event = self.under_newer(
            container_tag, newer, outcome.memory_id, outcome.version_id, judgement
        )
        return event, msgspec.structs.replace(
            outcome,
            possibly_outdated_by=newer.memory_id,
            similarity=judgement.similarity,
            reason="older_fact_time",
        )

    def backdated(
        self,
        container_tag: str,
        item: NewMemory,
        digest: str,
        vector: npt.NDArray[np.float32],
        newer: Head,
        judgement: Judgement,
        rule: Literal["automatic", "explicit"],
        batch: Heads,
        fresh_ids: list[str],
    ) -> tuple[list[AnyEvent], WriteOutcome]:
        """A write that would correct ``newer`` but states an older fact: it never becomes
        what is served. A chain of its own, linked as possibly outdated by ``newer``, so
        recall ranks ``newer`` above it and marks it."""
        events, outcome = self.created(container_tag, fresh_ids.pop(), item, digest, vector, batch)
        linked = self.under_newer(
            container_tag, newer, outcome.memory_id, outcome.version_id, judgement, rule
        )
        return [*events, linked], msgspec.structs.replace(
            outcome,
            possibly_outdated_by=newer.memory_id,
            similarity=judgement.similarity,
            reason="older_fact_time",
        )

    def under_newer(
        self,
        container_tag: str,
        newer: Head,
        memory_id: str,
        version_id: str,
        judgement: Judgement,
        rule: Literal["automatic", "explicit"] = "automatic",
    ) -> MemoryLinked:
        """The link of a written version under ``newer``, newer in fact time: the evidence
        sealed under the written memory's key, as the write's own."""
        return MemoryLinked(
            memory_id=newer.memory_id,
            version_id=newer.version_id,
            target_memory_id=memory_id,
            target_version_id=version_id,
            container_tag=container_tag,
            similarity=judgement.similarity,
            evidence=self.evidence(memory_id, judgement, rule, "older_fact_time", own_words=True),
        )

    def arbitrated(
        self, container_tag: str, head: Head, version_id: str, arbitration: Arbitration
    ) -> MemoryArbitrated:
        """The event of a model's ruling on a pair: its words sealed like conversation text."""
        answer = arbitration.answer
        return MemoryArbitrated(
            container_tag=container_tag,
            memory_id=head.memory_id,
            version_id=version_id,
            ruling=arbitration.ruling,
            answer=None
            if answer is None
            else self._sealer.seal_text(container_subject(container_tag), answer),
            model=arbitration.model,
            failure=arbitration.failure,
            latency_ms=arbitration.latency_ms,
        )

    def evidence(
        self,
        subject_memory: str,
        judgement: Judgement,
        rule: Literal["automatic", "explicit", "arbiter"],
        reason: str | None = None,
        *,
        own_words: bool = False,
    ) -> Evidence:
        """What the event records of a judgement: the differing words sealed under the key of
        the memory they now belong to. A link joins two chains, each erasable alone: it keeps
        only the written memory's own words (``own_words``), since the other's would outlive
        that other's erasure under this key."""
        words = {"added": judgement.added}
        if not own_words:
            words["removed"] = judgement.removed
        differing = msgspec.json.encode(words)
        default = judgement.reason if rule == "automatic" else "named"
        return Evidence(
            rule=rule,
            reason=default if reason is None else reason,
            shared_words=judgement.shared_words,
            differing=self._sealer.seal(memory_subject(subject_memory), differing),
        )

    def superseded(
        self,
        container_tag: str,
        item: NewMemory,
        vector: npt.NDArray[np.float32],
        head: Head,
        similarity: float,
        batch: Heads,
        evidence: Evidence,
    ) -> tuple[list[AnyEvent], WriteOutcome]:
        version_id = new_id("ver")
        event = MemorySuperseded(
            memory_id=head.memory_id,
            version_id=version_id,
            version=head.version + 1,
            supersedes_version_id=head.version_id,
            container_tag=container_tag,
            similarity=similarity,
            evidence=evidence,
            **version_fields(self._sealer, memory_subject(head.memory_id), item, vector),
        )
        batch.add(
            Head(
                head.memory_id,
                version_id,
                head.version + 1,
                content_hash(item.content),
                vector,
                item.content,
                fact_time(item),
                is_static=item.is_static,
            )
        )
        return [event], WriteOutcome(
            memory_id=head.memory_id,
            version_id=version_id,
            version=head.version + 1,
            status="superseded",
            similarity=similarity,
            reason=evidence.reason,
        )

    def made_static(
        self,
        container_tag: str,
        item: NewMemory,
        vector: npt.NDArray[np.float32],
        head: Head,
        batch: Heads,
        rule: Literal["automatic", "explicit"],
    ) -> tuple[list[AnyEvent], WriteOutcome]:
        """The exact text of ``head`` again with ``isStatic``, where ``head`` is not static: the
        flag changes the memory, so it is version n+1 with the same text (reason ``static``);
        a duplicate would drop it."""
        evidence = Evidence(rule=rule, reason="static", shared_words=1.0)
        return self.superseded(container_tag, item, vector, head, 1.0, batch, evidence)


def screened(
    container_tag: str, verdict: Verdict, events: list[AnyEvent], outcome: WriteOutcome
) -> tuple[list[AnyEvent], WriteOutcome]:
    """A write whose text the poisoning detector flags is stored all the same (never hide what
    was written), with its verdict appended beside it: recall shows it, trust counts it."""
    if not verdict.flagged:
        return events, outcome
    flagged = verdict.recorded(outcome.memory_id, outcome.version_id, container_tag)
    return [*events, flagged], msgspec.structs.replace(outcome, flags=tuple(verdict.reasons))


def dedup(
    container_tag: str, memory_id: str, version_id: str, version: int
) -> tuple[list[AnyEvent], WriteOutcome]:
    event = MemoryDeduplicated(
        memory_id=memory_id, version_id=version_id, container_tag=container_tag
    )
    return [event], WriteOutcome(
        memory_id=memory_id, version_id=version_id, version=version, status="deduplicated"
    )


def fact_time(item: NewMemory) -> int | None:
    """When the write says its fact was true (UTC ns), or None: when it is recorded."""
    return None if item.observed_at is None else parse_instant(item.observed_at)


def older_fact(item: NewMemory, head: Head) -> bool:
    """Whether the write's fact was true before the fact of ``head``: then it never replaces
    it. A time not given is the time of recording, that is now."""
    now = time.time_ns()
    written = fact_time(item)
    current = head.observed_at
    return (now if written is None else written) < (now if current is None else current)
