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

from collections.abc import Sequence
from itertools import accumulate
from typing import Literal, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from ...embedding.port import Embedder, from_bytes
from ...errors import KeyDestroyed, MemoryForgotten, NotFound, VersionConflict
from ...eventlog import Actor, Draft, Sealer
from ...eventlog.events import (
    AnyEvent,
)
from ...projections.memories.projection import MemoryProjection
from ...projections.memories.rows import VersionRow
from ...projections.vectors.exact import unit
from ...texts import content_hash
from ..oversight.trust import Trust
from ..poisoning.head import Detector
from ..record import Recorder, decided_again
from ..timings import NO_TIMINGS, StageTimings
from .arbiter import Arbiter, Arbitration
from .fresh_ids import FreshIds
from .gate import Gate, Head, Heads
from .keyed import KeySpan, WriteKey, keyed_event, written_elsewhere
from .outcomes import Outcomes, dedup, older_fact, screened
from .sameness import Gates, Judgement, judge, lowest_judged, may_keep
from .submitted import Decided, SubmittedGroups, WriteOutcome
from .versions import NewMemory

# How many of a container's live memories closest to a write are judged against it. In a
# container of thousands of facts built on shared templates, the memory a correction corrects
# was often not among the closest four (fast tier, 2,000 templated facts: 0.86 of corrections
# linked at 4, see bench/distinct.py); judging a pair the word sets tell apart costs
# microseconds.
NEIGHBOURS = 16


class Candidate(NamedTuple):
    """A live chain head close to a write, as it is judged against it."""

    similarity: float
    head: Head
    text: str


class Judged(NamedTuple):
    """A candidate judged: the chain head, the judgement, and the head's text."""

    head: Head
    judgement: Judgement
    text: str


class NearestLive(Protocol):
    """Finds the live latest versions of a container closest to a vector."""

    def nearest_many(
        self,
        container_tag: str,
        vectors: npt.NDArray[np.float32],
        texts: Sequence[str],
        k: int,
        at_least: float,
    ) -> list[list[tuple[int, float]]]:
        """For each vector (of each text), the ``k`` best (row id, cosine similarity) pairs
        with a similarity of ``at_least`` or more, and those of the memories sharing the
        text's rarest words, best first."""
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
        detector: Detector,
        trust: Trust | None = None,
        arbiter: Arbiter | None = None,
        timings: StageTimings = NO_TIMINGS,
    ) -> None:
        # A local model asked about unsure pairs, when the user turned arbitration on.
        self.arbiter = arbiter
        self._timings = timings  # hears each write's stage times (``/metrics``)
        self._detector = detector
        self._trust = trust
        self._recorder = recorder
        self._gate = gate
        self._sealer = sealer
        self._fresh = fresh
        self._memories = memories
        self._embedder = embedder
        self._nearest = nearest
        self._gates = gates
        self._made = Outcomes(sealer)
        # Neighbours under every gate are never judged: not asked for.
        self._at_least = gates.lowest

    @decided_again
    def write(
        self,
        container_tag: str,
        items: Sequence[NewMemory],
        actor: Actor,
        key: WriteKey | None = None,
    ) -> list[WriteOutcome]:
        """Write a batch into one container: one embedding pass, one durable append
        (``key``: the idempotency key recorded in it)."""
        spans = None if key is None else [[KeySpan(0, len(items), key)]]
        (result,) = self.write_groups([(container_tag, items)], actor, spans)
        if isinstance(result, BaseException):
            raise result
        return result

    def write_groups(
        self,
        groups: Sequence[tuple[str, Sequence[NewMemory]]],
        actor: Actor,
        keys: Sequence[Sequence[KeySpan]] | None = None,
    ) -> list[list[WriteOutcome] | Exception]:
        """Write batches into several containers at once: one embedding pass for all of
        them, each decided under its container's lock in turn (never two locks held; in the
        order of their tags), their appends submitted together (so they share group commits)
        and one projection sync.

        Each group gets its outcomes or the error that stopped it alone; a group that failed
        did not stop the others (a failed embedding pass, before anything is decided, raises).
        """
        return self.submit_groups(groups, actor, keys).finish()

    def submit_groups(
        self,
        groups: Sequence[tuple[str, Sequence[NewMemory]]],
        actor: Actor,
        keys: Sequence[Sequence[KeySpan]] | None = None,
    ) -> SubmittedGroups:
        """The first half of ``write_groups``: embed, decide and submit the appends. The
        writes are in flight when this returns: later decisions see their heads, so the next
        batch can be decided while this one is made durable and applied (``finish``).
        ``keys``: for each group, its requests sent with an idempotency key."""
        if self._trust is not None:
            self._trust.refuse_distrusted(actor)  # before anything is embedded or decided
        texts = [item.content for _, items in groups for item in items]
        results: list[list[WriteOutcome] | Exception] = [[] for _ in groups]
        submitted = SubmittedGroups(
            results, recorder=self._recorder, gate=self._gate, timings=self._timings
        )
        if not texts:
            return submitted
        vectors = self._embedder.embed(texts)
        submitted.lap("embed")
        starts = list(accumulate((len(items) for _, items in groups), initial=0))
        try:
            # On a shared log a decided write keeps this node's turn for its container until
            # it lands: turns taken in one order (the tags') never wait on each other in a loop.
            for n in sorted(range(len(groups)), key=lambda n: groups[n][0]):
                container_tag, items = groups[n]
                chunk = vectors[starts[n] : starts[n + 1]]
                if not items:
                    continue
                spans = keys[n] if keys else ()
                try:
                    submitted.decided.append(
                        self._submit(n, container_tag, items, chunk, actor, spans)
                    )
                except Exception as exc:
                    results[n] = exc
        except BaseException:
            submitted.abandon()
            raise
        submitted.lap("decide")
        return submitted

    def _submit(
        self,
        group: int,
        container_tag: str,
        items: Sequence[NewMemory],
        vectors: npt.NDArray[np.float32],
        actor: Actor,
        spans: Sequence[KeySpan] = (),
    ) -> Decided:
        """Decide one container's writes under its lock and submit their append; the heads
        they make stay *in flight* (seen by the next decisions) until the gate lands them.
        Each keyed request's ``write.keyed`` follows its own events in the append."""
        # Ids for the chains this batch may start, their keys already durable (made ahead,
        # outside any lock); those its decisions do not use go back to the pool.
        unused = self._fresh.take(len(items))
        # Pure: outside the lock. The head reads the vector the write made.
        verdicts = [
            self._detector.verdict(item.content, vector)
            for item, vector in zip(items, vectors, strict=True)
        ]
        token = object()
        ends = {span.stop: span for span in spans}
        with self._gate.lock(container_tag):
            if self._recorder.shared and spans:
                elsewhere = written_elsewhere(self._memories, container_tag, actor, spans)
                if elsewhere is not None:
                    self._fresh.give_back(unused)
                    raise elsewhere
            batch = self._gate.in_flight(container_tag)
            drafts: list[Draft] = []
            outcomes: list[WriteOutcome] = []
            counts: list[int] = []
            # Under the lock: the projections must not move between this and the decisions.
            neighbours = self._nearest.nearest_many(
                container_tag, vectors, [item.content for item in items], NEIGHBOURS, self._at_least
            )
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
                events, outcome = screened(container_tag, verdict, events, outcome)
                drafts.extend(Draft(actor, event) for event in events)
                outcomes.append(outcome)
                counts.append(len(events))
                if ends and (span := ends.get(len(outcomes))) is not None:
                    at = slice(span.start, span.stop)
                    keyed = keyed_event(container_tag, actor, span.key, outcomes[at], counts[at])
                    drafts.append(Draft(actor, keyed))
                    counts[-1] += 1  # the next write's first record comes after it
            self._fresh.give_back(unused)
            future = self._recorder.submit(drafts)
            made = {o.memory_id for o in outcomes if o.status != "deduplicated"}
            self._gate.hold(container_tag, token, future, [h for h in batch if h.memory_id in made])
        return Decided(
            group=group,
            container_tag=container_tag,
            token=token,
            append=future,
            outcomes=outcomes,
            counts=counts,
        )

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
        made = self._made
        if item.supersedes is not None:
            return self._explicit(container_tag, item, digest, vector, batch, fresh_ids)
        head = batch.with_hash(digest)  # the batch's own chains first: they are the newest
        if head is not None:
            return self._again(container_tag, item, vector, head, batch)
        if duplicate is not None and duplicate.memory_id not in batch:
            return self._again(container_tag, item, vector, _head_of(duplicate), batch)
        same, possible = (
            self._judged(item, vector, near, batch) if item.auto_supersede else (None, None)
        )
        if same is not None:
            head, judgement, _ = same
            if older_fact(item, head):
                return made.backdated(
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
            evidence = made.evidence(head.memory_id, judgement, "automatic")
            return made.superseded(
                container_tag, item, vector, head, judgement.similarity, batch, evidence
            )
        arbitration: Arbitration | None = None
        if possible is not None and self.arbiter is not None:
            head, judgement, text = possible
            arbitration = self.arbiter.arbitrate(text, item.content)
            if arbitration.ruling in ("same", "update") and not older_fact(item, head):
                evidence = made.evidence(
                    head.memory_id, judgement, "arbiter", f"arbiter_{arbitration.ruling}"
                )
                events, outcome = made.superseded(
                    container_tag, item, vector, head, judgement.similarity, batch, evidence
                )
                ruled = made.arbitrated(container_tag, head, outcome.version_id, arbitration)
                return [*events, ruled], outcome
        events, outcome = made.created(container_tag, fresh_ids.pop(), item, digest, vector, batch)
        if possible is None:
            return events, outcome
        head, judgement, _ = possible
        if arbitration is not None:
            events.append(made.arbitrated(container_tag, head, outcome.version_id, arbitration))
            if arbitration.ruling == "different":
                return events, outcome  # both hold, the model says: not linked
        # Maybe an update; of a fact newer than this one, the link runs the other way.
        link = made.outdated if older_fact(item, head) else made.linked
        linked, outcome = link(container_tag, outcome, head, judgement)
        return [*events, linked], outcome

    def _again(
        self,
        container_tag: str,
        item: NewMemory,
        vector: npt.NDArray[np.float32],
        head: Head,
        batch: Heads,
        rule: Literal["automatic", "explicit"] = "automatic",
    ) -> tuple[list[AnyEvent], WriteOutcome]:
        """The exact text of a live chain's head again: a duplicate, unless it makes the
        memory static (then the flag would be lost)."""
        if item.is_static and not head.is_static:
            return self._made.made_static(container_tag, item, vector, head, batch, rule)
        return dedup(container_tag, head.memory_id, head.version_id, head.version)

    def _judged(
        self,
        item: NewMemory,
        vector: npt.NDArray[np.float32],
        near: list[tuple[VersionRow, float]],
        batch: Heads,
    ) -> tuple[Judged | None, Judged | None]:
        """The live chain heads close to ``item`` (in the projection, and decided earlier but
        not applied yet), judged most similar first: the first judged the same fact (to
        supersede) and, failing that, the first that it may update (to link)."""
        # Under ``at_least`` this write is distinct from any text, whatever its words.
        at_least = lowest_judged(item.content, self._gates)
        candidates: list[Candidate] = []
        for row, similarity in near:
            if similarity < at_least:
                break
            if row.memory_id in batch or not _live_latest(row):
                continue
            candidates.append(Candidate(similarity, _head_of(row), row.content or ""))
        pending = batch.closest(vector, at_least)
        if pending is not None:
            head, similarity = pending
            candidates.append(Candidate(similarity, head, head.text))
        candidates.sort(key=lambda c: -c.similarity)  # stable: the projection's first among equals
        # Only a text whose words the write keeps can be superseded: those are judged first,
        # then the others in turn up to the first possible update. (Judging a pair aligns
        # its words, tens of microseconds; a container of one template has many candidates.)
        judged: dict[int, Judgement] = {}  # judging is pure: a pair is judged once
        for at, (similarity, head, text) in enumerate(candidates):
            if may_keep(text, item.content, similarity, self._gates):
                judged[at] = judgement = judge(text, item.content, similarity, self._gates)
                if judgement.verdict == "same":
                    return Judged(head, judgement, text), None
        for at, (similarity, head, text) in enumerate(candidates):
            judgement = judged.get(at) or judge(text, item.content, similarity, self._gates)
            if judgement.verdict == "possible":
                return None, Judged(head, judgement, text)
        return None, None

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
                is_static=latest.is_static,
            )
            stored = dict(self._memories.vectors_of([latest.row_id])).get(latest.row_id)
            target_vector = None if stored is None else unit(from_bytes(stored).reshape(1, -1))[0]
        if item.expected_version is not None and head.version != item.expected_version:
            raise VersionConflict(
                f"memory {memory_id!r} is at version {head.version}, not {item.expected_version}"
            )
        if head.content_hash == digest:
            return self._again(container_tag, item, vector, head, batch, "explicit")
        similarity = 0.0 if target_vector is None else float(target_vector @ vector)
        judgement = judge(text, item.content, similarity, self._gates)
        made = self._made
        if older_fact(item, head):
            return made.backdated(
                container_tag, item, digest, vector, head, judgement, "explicit", batch, fresh_ids
            )
        evidence = made.evidence(memory_id, judgement, "explicit")
        return made.superseded(container_tag, item, vector, head, similarity, batch, evidence)


def _live_latest(row: VersionRow) -> bool:
    return row.valid_to is None and not row.forgotten and not row.erased


def _head_of(row: VersionRow) -> Head:
    return Head(
        row.memory_id,
        row.version_id,
        row.version,
        "",
        None,
        observed_at=row.observed_at,
        is_static=row.is_static,
    )
