"""The write decision: the one choke point every new memory goes through.

A write is decided against the current state of its container: an exact duplicate of a live
latest version becomes a ``memory.deduplicated`` event and no new version; a near duplicate
(cosine at or above the supersede threshold, and at least half of the two texts' distinct
words shared) becomes version n+1 of that chain; anything else starts a new chain. Texts are
embedded in one batch before any lock; each container's writes are decided under its gate
(``gate.py``), against the projections plus the heads still in flight.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Literal, Protocol

import msgspec
import numpy as np
import numpy.typing as npt

from ..embedding.port import Embedder
from ..eventlog import Actor, Appended, Draft, Sealer, StoredRecord
from ..eventlog.events import AnyEvent, MemoryDeduplicated, MemorySuperseded, MemoryWritten
from ..eventlog.subjects import memory_subject
from ..projections.analysis import plain_words
from ..projections.memories import MemoryProjection
from ..projections.memory_rows import VersionRow, content_hash
from .fresh_ids import FreshIds
from .gate import Gate, Head, Heads
from .record import Recorder
from .versions import NewMemory, new_id, version_fields

Status = Literal["created", "superseded", "deduplicated"]

# A near duplicate must also restate the same words: at least this share of the two texts'
# distinct words (Jaccard) in common. A correction changes a few words of the same statement
# ("John prefers dark mode" -> "John prefers light mode": 0.6); two different remarks that an
# embedding finds close ("Thanks, Mel!" / "Thanks, Caroline!" by another speaker) rarely do.
MIN_SHARED_WORDS = 0.5


class WriteOutcome(msgspec.Struct, frozen=True, kw_only=True):
    memory_id: str
    version_id: str
    version: int
    status: Status
    similarity: float | None = None
    seq: int = 0


class NearestLive(Protocol):
    """Finds the live latest versions of a container closest to a vector."""

    def nearest_many(
        self, container_tag: str, vectors: npt.NDArray[np.float32], k: int, at_least: float
    ) -> list[list[tuple[int, float]]]:
        """For each vector, the ``k`` best (row id, cosine similarity) pairs with a similarity
        of ``at_least`` or more, best first."""
        ...


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
        # (group, container, in-flight token, the append, the outcomes without their seqs)
        self.decided: list[tuple[int, str, object, Future[Appended], list[WriteOutcome]]] = []

    def finish(self) -> list[list[WriteOutcome] | Exception]:
        """Wait until the appends are durable and applied; each group's outcomes or error."""
        results = self._results
        try:
            last = 0
            appended: list[StoredRecord] = []
            for n, _, _, future, outcomes in self.decided:
                try:
                    done = future.result()
                except Exception as exc:
                    results[n] = exc
                    continue
                seqs = done.seqs
                appended.extend(done.records)
                last = max(last, seqs[-1])
                results[n] = [
                    msgspec.structs.replace(o, seq=seq)
                    for o, seq in zip(outcomes, seqs, strict=True)
                ]
            if last:
                appended.sort(key=lambda r: r.seq)
                self._apply(last, appended)
        finally:
            self.abandon()
        return results

    def abandon(self) -> None:
        """Drop the in-flight heads (after ``finish``, or when it will never run)."""
        for _, container_tag, token, _, _ in self.decided:
            self._land(container_tag, token)


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
        supersede_threshold: float,
    ) -> None:
        self._recorder = recorder
        self._gate = gate
        self._sealer = sealer
        self._fresh = fresh
        self._memories = memories
        self._embedder = embedder
        self._nearest = nearest
        self._threshold = supersede_threshold

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
    ) -> tuple[object, Future[Appended], list[WriteOutcome]]:
        """Decide one container's writes under its lock and submit their append; the heads
        they make stay *in flight* (seen by the next decisions) until the gate lands them."""
        # Ids for the chains this batch may start, their keys already durable (made ahead,
        # outside any lock); those its decisions do not use go back to the pool.
        unused = self._fresh.take(len(items))
        token = object()
        with self._gate.lock(container_tag):
            batch = self._gate.in_flight(container_tag)
            drafts: list[Draft] = []
            outcomes: list[WriteOutcome] = []
            # Under the lock: the projections must not move between this and the decisions.
            neighbours = self._nearest.nearest_many(container_tag, vectors, 4, self._threshold)
            digests = [content_hash(item.content) for item in items]
            duplicates = self._memories.live_duplicates(container_tag, digests)
            for item, digest, vector, near in zip(items, digests, vectors, neighbours, strict=True):
                event, outcome = self._decide(
                    container_tag, item, digest, duplicates.get(digest), vector, near, batch, unused
                )
                drafts.append(Draft(actor, event))
                outcomes.append(outcome)
            self._fresh.give_back(unused)
            future = self._recorder.submit(drafts)
            made = {o.memory_id for o in outcomes if o.status != "deduplicated"}
            self._gate.hold(container_tag, token, future, [h for h in batch if h.memory_id in made])
        return token, future, outcomes

    def _decide(
        self,
        container_tag: str,
        item: NewMemory,
        digest: str,
        duplicate: VersionRow | None,
        vector: npt.NDArray[np.float32],
        near: list[tuple[int, float]],
        batch: Heads,
        fresh_ids: list[str],
    ) -> tuple[AnyEvent, WriteOutcome]:
        """Decide one write (``digest`` is its content hash, ``duplicate`` the live version in
        the projection with that content); a new chain takes its id (and ready key) from
        ``fresh_ids``."""
        head = batch.with_hash(digest)  # the batch's own chains first: they are the newest
        if head is not None:
            return _dedup(container_tag, head.memory_id, head.version_id, head.version)
        if duplicate is not None and duplicate.memory_id not in batch:
            return _dedup(
                container_tag, duplicate.memory_id, duplicate.version_id, duplicate.version
            )
        target = self._closest(item, vector, near, batch)
        if target is not None:
            head, similarity = target
            return self._supersede(container_tag, item, vector, head, similarity, batch)
        memory_id = fresh_ids.pop()
        version_id = new_id("ver")
        event = MemoryWritten(
            memory_id=memory_id,
            version_id=version_id,
            container_tag=container_tag,
            **version_fields(self._sealer, memory_subject(memory_id), item, vector),
        )
        batch.add(Head(memory_id, version_id, 1, digest, vector, item.content))
        return event, WriteOutcome(
            memory_id=memory_id, version_id=version_id, version=1, status="created"
        )

    def _closest(
        self,
        item: NewMemory,
        vector: npt.NDArray[np.float32],
        near: list[tuple[int, float]],
        batch: Heads,
    ) -> tuple[Head, float] | None:
        """The chain head ``item`` is a near duplicate of: the most similar one whose cosine is
        at or above the threshold and which shares at least ``MIN_SHARED_WORDS`` of the words."""
        best: tuple[Head, float] | None = None
        for row_id, similarity in near:
            if similarity < self._threshold:
                break
            row = self._memories.by_row_ids([row_id]).get(row_id)
            if row is None or row.memory_id in batch or not _live_latest(row):
                continue
            if _shared(item.content, row.content or "") < MIN_SHARED_WORDS:
                continue
            best = (_head_of(row), similarity)
            break
        pending = batch.closest(vector, self._threshold)
        if (
            pending is not None
            and (best is None or pending[1] > best[1])
            and _shared(item.content, pending[0].text) >= MIN_SHARED_WORDS
        ):
            best = pending
        return best

    def _supersede(
        self,
        container_tag: str,
        item: NewMemory,
        vector: npt.NDArray[np.float32],
        head: Head,
        similarity: float,
        batch: Heads,
    ) -> tuple[AnyEvent, WriteOutcome]:
        version_id = new_id("ver")
        event = MemorySuperseded(
            memory_id=head.memory_id,
            version_id=version_id,
            version=head.version + 1,
            supersedes_version_id=head.version_id,
            container_tag=container_tag,
            similarity=similarity,
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
            )
        )
        return event, WriteOutcome(
            memory_id=head.memory_id,
            version_id=version_id,
            version=head.version + 1,
            status="superseded",
            similarity=similarity,
        )


def _dedup(
    container_tag: str, memory_id: str, version_id: str, version: int
) -> tuple[AnyEvent, WriteOutcome]:
    event = MemoryDeduplicated(
        memory_id=memory_id, version_id=version_id, container_tag=container_tag
    )
    return event, WriteOutcome(
        memory_id=memory_id, version_id=version_id, version=version, status="deduplicated"
    )


def _live_latest(row: VersionRow) -> bool:
    return row.valid_to is None and not row.forgotten and not row.erased


def _head_of(row: VersionRow) -> Head:
    return Head(row.memory_id, row.version_id, row.version, "", None)


def _shared(text: str, other: str) -> float:
    """The share of distinct words two texts have in common (Jaccard); 1.0 for two empties."""
    a, b = plain_words(text), plain_words(other)
    union = len(a | b)
    return len(a & b) / union if union else 1.0
