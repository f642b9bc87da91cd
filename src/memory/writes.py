"""The write decision: the one choke point every new memory goes through.

A write is decided against the current state of its container. A write naming the memory it
corrects (``supersedes``) becomes that chain's next version. Otherwise an exact duplicate of a
live latest version becomes a ``memory.deduplicated`` event and no new version; a close live
memory that ``sameness.judge`` finds to be the same fact with a new value becomes version n+1
of its chain (the event records the evidence); one it may update is kept beside it, linked by
a ``memory.linked`` event; anything else starts a new chain. Texts are embedded in one batch
before any lock; each container's writes are decided under its gate (``gate.py``), against
the projections plus the heads still in flight.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Literal, Protocol

import msgspec
import numpy as np
import numpy.typing as npt

from ..clock import parse_instant
from ..embedding.port import Embedder, from_bytes
from ..errors import KeyDestroyed, MemoryForgotten, NotFound, VersionConflict
from ..eventlog import Actor, Appended, Draft, Sealer
from ..eventlog.events import (
    AnyEvent,
    Evidence,
    MemoryArbitrated,
    MemoryDeduplicated,
    MemoryLinked,
    MemorySuperseded,
    MemoryWritten,
)
from ..eventlog.subjects import container_subject, memory_subject
from ..projections.memories import MemoryProjection
from ..projections.memory_rows import VersionRow, content_hash
from ..projections.vector_exact import unit
from .arbiter import Arbiter, Arbitration
from .fresh_ids import FreshIds
from .gate import Gate, Head, Heads
from .poisoning import Verdict, detect
from .record import Recorder
from .sameness import Gates, Judgement, judge
from .submitted import SubmittedGroups, WriteOutcome
from .trust import Trust
from .versions import NewMemory, new_id, version_fields

# A candidate judged: the chain head, the judgement, and the head's text.
_Judged = tuple[Head, Judgement, str]


class NearestLive(Protocol):
    """Finds the live latest versions of a container closest to a vector."""

    def nearest_many(
        self, container_tag: str, vectors: npt.NDArray[np.float32], k: int, at_least: float
    ) -> list[list[tuple[int, float]]]:
        """For each vector, the ``k`` best (row id, cosine similarity) pairs with a similarity
        of ``at_least`` or more, best first."""
        ...


class Writes:
    def __init__(
        self,
        *,
        recorder: Recorder,
        gate: Gate,
        sealer: Sealer,
        fresh: FreshIds,
        memories: MemoryProjection,
        embedder: Embedder,
        nearest: NearestLive,
        gates: Gates,
        trust: Trust | None = None,
    ) -> None:
        self._trust = trust
        self._recorder = recorder
        self._gate = gate
        self._sealer = sealer
        self._fresh = fresh
        self._memories = memories
        self._embedder = embedder
        self._nearest = nearest
        self._gates = gates
        # A local model asked about unsure pairs, when the user turned arbitration on.
        self.arbiter: Arbiter | None = None
        # Neighbours under every gate are never judged: not asked for.
        self._at_least = gates.lowest

    def write(
        self, container_tag: str, items: Sequence[NewMemory], actor: Actor
    ) -> list[WriteOutcome]:
        """Write a batch into one container: one embedding pass, one durable append."""
        (result,) = self.write_groups([(container_tag, items)], actor)
        if isinstance(result, BaseException):
            raise result
        return result

    def write_groups(
        self, groups: Sequence[tuple[str, Sequence[NewMemory]]], actor: Actor
    ) -> list[list[WriteOutcome] | Exception]:
        """Write batches into several containers at once: one embedding pass for all of
        them, each decided under its container's lock in turn (never two locks held), their
        appends submitted together (so they share group commits) and one projection sync.

        Each group gets its outcomes or the error that stopped it alone; a group that failed
        did not stop the others (a failed embedding pass, before anything is decided, raises).
        """
        return self.submit_groups(groups, actor).finish()

    def submit_groups(
        self, groups: Sequence[tuple[str, Sequence[NewMemory]]], actor: Actor
    ) -> SubmittedGroups:
        """The first half of ``write_groups``: embed, decide and submit the appends. The
        writes are in flight when this returns: later decisions see their heads, so the next
        batch can be decided while this one is made durable and applied (``finish``)."""
        if self._trust is not None:
            self._trust.refuse_distrusted(actor)  # before anything is embedded or decided
        texts = [item.content for _, items in groups for item in items]
        results: list[list[WriteOutcome] | Exception] = [[] for _ in groups]
        submitted = SubmittedGroups(results, apply=self._recorder.apply, land=self._gate.land)
        if not texts:
            return submitted
        vectors = self._embedder.embed(texts)
        start = 0
        try:
            for n, (container_tag, items) in enumerate(groups):
                chunk = vectors[start : start + len(items)]
                start += len(items)
                if not items:
                    continue
                try:
                    submitted.decided.append(
                        (n, container_tag, *self._submit(container_tag, items, chunk, actor))
                    )
                except Exception as exc:
                    results[n] = exc
        except BaseException:
            submitted.abandon()
            raise
        return submitted

    def _submit(
        self,
        container_tag: str,
        items: Sequence[NewMemory],
        vectors: npt.NDArray[np.float32],
        actor: Actor,
    ) -> tuple[object, Future[Appended], list[WriteOutcome], list[int]]:
        """Decide one container's writes under its lock and submit their append; the heads
        they make stay *in flight* (seen by the next decisions) until the gate lands them."""
        # Ids for the chains this batch may start, their keys already durable (made ahead,
        # outside any lock); those its decisions do not use go back to the pool.
        unused = self._fresh.take(len(items))
        verdicts = [detect(item.content) for item in items]  # pure: outside the lock
        token = object()
        with self._gate.lock(container_tag):
            batch = self._gate.in_flight(container_tag)
            drafts: list[Draft] = []
            outcomes: list[WriteOutcome] = []
            counts: list[int] = []
            # Under the lock: the projections must not move between this and the decisions.
            neighbours = self._nearest.nearest_many(container_tag, vectors, 4, self._at_least)
            digests = [content_hash(item.content) for item in items]
            duplicates = self._memories.live_duplicates(container_tag, digests)
            # Every neighbour's row in one read: the projection does not move under the lock.
            close = sorted({row_id for near in neighbours for row_id, _ in near})
            rows = self._memories.by_row_ids(close) if close else {}
            for item, digest, vector, near, verdict in zip(
                items, digests, vectors, neighbours, verdicts, strict=True
            ):
                events, outcome = self._decide(
                    container_tag,
                    item,
                    digest,
                    duplicates.get(digest),
                    vector,
                    [(rows[r], similarity) for r, similarity in near if r in rows],
                    batch,
                    unused,
                )
                events, outcome = _screened(container_tag, verdict, events, outcome)
                drafts.extend(Draft(actor, event) for event in events)
                outcomes.append(outcome)
                counts.append(len(events))
            self._fresh.give_back(unused)
            future = self._recorder.submit(drafts)
            made = {o.memory_id for o in outcomes if o.status != "deduplicated"}
            self._gate.hold(container_tag, token, future, [h for h in batch if h.memory_id in made])
        return token, future, outcomes, counts

    def _decide(
        self,
        container_tag: str,
        item: NewMemory,
        digest: str,
        duplicate: VersionRow | None,
        vector: npt.NDArray[np.float32],
        near: list[tuple[VersionRow, float]],
        batch: Heads,
        fresh_ids: list[str],
    ) -> tuple[list[AnyEvent], WriteOutcome]:
        """Decide one write (``digest`` is its content hash, ``duplicate`` the live version in
        the projection with that content); a new chain takes its id (and ready key) from
        ``fresh_ids``."""
        if item.supersedes is not None:
            return self._explicit(container_tag, item, digest, vector, batch, fresh_ids)
        head = batch.with_hash(digest)  # the batch's own chains first: they are the newest
        if head is not None:
            return _dedup(container_tag, head.memory_id, head.version_id, head.version)
        if duplicate is not None and duplicate.memory_id not in batch:
            return _dedup(
                container_tag, duplicate.memory_id, duplicate.version_id, duplicate.version
            )
        same, possible = (
            self._judged(item, vector, near, batch) if item.auto_supersede else (None, None)
        )
        if same is not None:
            head, judgement, _ = same
            if _older_fact(item, head):
                return self._backdated(
                    container_tag,
                    item,
                    digest,
                    vector,
                    head,
                    judgement,
                    "automatic",
                    batch,
                    fresh_ids,
                )
            evidence = self._evidence(head.memory_id, judgement, "automatic")
            return self._supersede(
                container_tag, item, vector, head, judgement.similarity, batch, evidence
            )
        arbitration: Arbitration | None = None
        if possible is not None and self.arbiter is not None:
            head, judgement, text = possible
            arbitration = self.arbiter.arbitrate(text, item.content)
            if arbitration.ruling in ("same", "update") and not _older_fact(item, head):
                evidence = self._evidence(
                    head.memory_id, judgement, "arbiter", f"arbiter_{arbitration.ruling}"
                )
                made, outcome = self._supersede(
                    container_tag, item, vector, head, judgement.similarity, batch, evidence
                )
                ruled = self._arbitrated(container_tag, head, outcome.version_id, arbitration)
                return [*made, ruled], outcome
        memory_id = fresh_ids.pop()
        version_id = new_id("ver")
        events: list[AnyEvent] = [
            MemoryWritten(
                memory_id=memory_id,
                version_id=version_id,
                container_tag=container_tag,
                **version_fields(self._sealer, memory_subject(memory_id), item, vector),
            )
        ]
        batch.add(Head(memory_id, version_id, 1, digest, vector, item.content, _fact_time(item)))
        outcome = WriteOutcome(
            memory_id=memory_id, version_id=version_id, version=1, status="created"
        )
        if possible is not None and arbitration is not None:
            head = possible[0]
            events.append(self._arbitrated(container_tag, head, version_id, arbitration))
            if arbitration.ruling == "different":
                return events, outcome  # both hold, the model says: not linked
        if possible is not None and _older_fact(item, possible[0]):
            # Maybe an update, but of a fact newer than this one: the link runs the other way.
            head, judgement, _ = possible
            events.append(self._linked(container_tag, head, memory_id, version_id, judgement))
            outcome = msgspec.structs.replace(
                outcome,
                possibly_outdated_by=head.memory_id,
                similarity=judgement.similarity,
                reason="older_fact_time",
            )
        elif possible is not None:
            head, judgement, _ = possible
            events.append(
                MemoryLinked(
                    memory_id=memory_id,
                    version_id=version_id,
                    target_memory_id=head.memory_id,
                    target_version_id=head.version_id,
                    container_tag=container_tag,
                    similarity=judgement.similarity,
                    evidence=self._evidence(memory_id, judgement, "automatic"),
                )
            )
            outcome = msgspec.structs.replace(
                outcome,
                possibly_updates=head.memory_id,
                similarity=judgement.similarity,
                reason=judgement.reason,
            )
        return events, outcome

    def _judged(
        self,
        item: NewMemory,
        vector: npt.NDArray[np.float32],
        near: list[tuple[VersionRow, float]],
        batch: Heads,
    ) -> tuple[_Judged | None, _Judged | None]:
        """The live chain heads close to ``item`` (in the projection, and decided earlier but
        not applied yet), judged most similar first: the first judged the same fact (to
        supersede) and, failing that, the first that it may update (to link)."""
        candidates: list[tuple[float, Head, str]] = []
        for row, similarity in near:
            if similarity < self._at_least:
                break
            if row.memory_id in batch or not _live_latest(row):
                continue
            candidates.append((similarity, _head_of(row), row.content or ""))
        pending = batch.closest(vector, self._at_least)
        if pending is not None:
            candidates.append((pending[1], pending[0], pending[0].text))
        candidates.sort(key=lambda c: -c[0])  # stable: the projection's first among equals
        possible: _Judged | None = None
        for similarity, head, text in candidates:
            judgement = judge(text, item.content, similarity, self._gates)
            if judgement.verdict == "same":
                return (head, judgement, text), None
            if judgement.verdict == "possible" and possible is None:
                possible = (head, judgement, text)
        return None, possible

    def _explicit(
        self,
        container_tag: str,
        item: NewMemory,
        digest: str,
        vector: npt.NDArray[np.float32],
        batch: Heads,
        fresh_ids: list[str],
    ) -> tuple[list[AnyEvent], WriteOutcome]:
        """The write names the memory it corrects: the next version of that chain (or, for
        its own latest text, a duplicate of it); unless its fact is older than the chain's,
        which stays served, the write kept beside it as an older memory."""
        memory_id = item.supersedes
        assert memory_id is not None
        head = batch.get(memory_id)
        if head is not None:
            text, target_vector = head.text, head.vector
        else:
            latest = self._memories.latest(memory_id)
            if latest is None or latest.container_tag != container_tag:
                raise NotFound(f"no memory {memory_id!r} in container {container_tag!r}")
            if latest.erased:
                raise KeyDestroyed(f"memory {memory_id!r} was erased")
            if latest.forgotten:
                raise MemoryForgotten(f"memory {memory_id!r} is forgotten: restore it first")
            text = latest.content or ""
            head = Head(
                latest.memory_id,
                latest.version_id,
                latest.version,
                content_hash(text),
                None,
                observed_at=latest.observed_at,
            )
            stored = dict(self._memories.vectors_of([latest.row_id])).get(latest.row_id)
            target_vector = None if stored is None else unit(from_bytes(stored).reshape(1, -1))[0]
        if item.expected_version is not None and head.version != item.expected_version:
            raise VersionConflict(
                f"memory {memory_id!r} is at version {head.version}, not {item.expected_version}"
            )
        if head.content_hash == digest:
            return _dedup(container_tag, head.memory_id, head.version_id, head.version)
        similarity = 0.0 if target_vector is None else float(target_vector @ vector)
        judgement = judge(text, item.content, similarity, self._gates)
        if _older_fact(item, head):
            return self._backdated(
                container_tag, item, digest, vector, head, judgement, "explicit", batch, fresh_ids
            )
        evidence = self._evidence(memory_id, judgement, "explicit")
        return self._supersede(container_tag, item, vector, head, similarity, batch, evidence)

    def _backdated(
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
        memory_id = fresh_ids.pop()
        version_id = new_id("ver")
        written = MemoryWritten(
            memory_id=memory_id,
            version_id=version_id,
            container_tag=container_tag,
            **version_fields(self._sealer, memory_subject(memory_id), item, vector),
        )
        linked = self._linked(container_tag, newer, memory_id, version_id, judgement, rule)
        batch.add(Head(memory_id, version_id, 1, digest, vector, item.content, _fact_time(item)))
        return [written, linked], WriteOutcome(
            memory_id=memory_id,
            version_id=version_id,
            version=1,
            status="created",
            similarity=judgement.similarity,
            possibly_outdated_by=newer.memory_id,
            reason="older_fact_time",
        )

    def _linked(
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
            evidence=self._evidence(memory_id, judgement, rule, "older_fact_time"),
        )

    def _arbitrated(
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

    def _evidence(
        self,
        subject_memory: str,
        judgement: Judgement,
        rule: Literal["automatic", "explicit", "arbiter"],
        reason: str | None = None,
    ) -> Evidence:
        """What the event records of a judgement: the differing words sealed under the key of
        the memory they now belong to."""
        differing = msgspec.json.encode({"removed": judgement.removed, "added": judgement.added})
        default = judgement.reason if rule == "automatic" else "named"
        return Evidence(
            rule=rule,
            reason=default if reason is None else reason,
            shared_words=judgement.shared_words,
            differing=self._sealer.seal(memory_subject(subject_memory), differing),
        )

    def _supersede(
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
                _fact_time(item),
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


def _screened(
    container_tag: str, verdict: Verdict, events: list[AnyEvent], outcome: WriteOutcome
) -> tuple[list[AnyEvent], WriteOutcome]:
    """A write whose text the poisoning detector flags is stored all the same (never hide what
    was written), with its verdict appended beside it: recall shows it, trust counts it."""
    if not verdict.flagged:
        return events, outcome
    flagged = verdict.recorded(outcome.memory_id, outcome.version_id, container_tag)
    return [*events, flagged], msgspec.structs.replace(outcome, flags=tuple(verdict.reasons))


def _dedup(
    container_tag: str, memory_id: str, version_id: str, version: int
) -> tuple[list[AnyEvent], WriteOutcome]:
    event = MemoryDeduplicated(
        memory_id=memory_id, version_id=version_id, container_tag=container_tag
    )
    return [event], WriteOutcome(
        memory_id=memory_id, version_id=version_id, version=version, status="deduplicated"
    )


def _live_latest(row: VersionRow) -> bool:
    return row.valid_to is None and not row.forgotten and not row.erased


def _head_of(row: VersionRow) -> Head:
    return Head(row.memory_id, row.version_id, row.version, "", None, observed_at=row.observed_at)


def _fact_time(item: NewMemory) -> int | None:
    """When the write says its fact was true (UTC ns), or None: when it is recorded."""
    return None if item.observed_at is None else parse_instant(item.observed_at)


def _older_fact(item: NewMemory, head: Head) -> bool:
    """Whether the write's fact was true before the fact of ``head``: then it never replaces
    it. A time not given is the time of recording, that is now."""
    now = time.time_ns()
    written = _fact_time(item)
    current = head.observed_at
    return (now if written is None else written) < (now if current is None else current)
