"""What is done to a whole chain after it is written: edit (a new version, never a
mutation), forget and restore (a reversible flag), erase (the key destroyed), and a
container's profile.

Each reads the chain's latest version and appends under the container's lock, after letting
the writes still in flight reach the projections (``Gate.settle``).
"""

from __future__ import annotations

import msgspec

from ...clock import parse_instant
from ...embedding.port import Embedder
from ...errors import KeyDestroyed, NotFound, NothingChanged, VersionConflict
from ...eventlog import Actor, Draft, KeyStore, Sealer
from ...eventlog.events import (
    AnyEvent,
    ChainForgotten,
    ChainRestored,
    MemoryEdited,
    ProfileUpdated,
    SubjectErased,
)
from ...eventlog.subjects import memory_subject, profile_subject
from ...projections.memories.projection import MemoryProjection
from ...projections.memories.rows import VersionRow
from ...texts import content_hash
from ..oversight.trust import Trust
from ..poisoning.head import Detector
from ..record import Recorder, decided_again
from ..writing.decision import Writes
from ..writing.gate import Gate
from ..writing.submitted import WriteOutcome
from ..writing.versions import NewMemory, new_id, version_fields
from .splitting import Splits


class Chains:
    def __init__(
        self,
        *,
        recorder: Recorder,
        gate: Gate,
        keys: KeyStore,
        sealer: Sealer,
        memories: MemoryProjection,
        embedder: Embedder,
        splits: Splits,
        writes: Writes,
        detector: Detector,
        trust: Trust | None = None,
    ) -> None:
        self.detector = detector
        self._writes = writes
        self._trust = trust
        self._splits = splits
        self._recorder = recorder
        self._gate = gate
        self._keys = keys
        self._sealer = sealer
        self._memories = memories
        self._embedder = embedder

    @decided_again
    def edit(
        self,
        memory_id: str,
        item: NewMemory,
        actor: Actor,
        *,
        expected_version: int | None = None,
    ) -> WriteOutcome:
        """A new version with new content (PATCH): never a mutation; flagged like a write
        when the poisoning detector flags its text. An edit whose fact (``observed_at``) is
        older than the chain's latest never becomes what is served: it is written as a
        correction named of the chain, which keeps it beside the chain as an older memory. An
        edit that would change nothing of the latest version is refused (``NothingChanged``)."""
        self._refuse(actor)
        container_tag = self._existing(memory_id).container_tag
        current = self._memories.latest(memory_id)
        if (
            item.observed_at is not None
            and current is not None
            and parse_instant(item.observed_at) < current.observed_at
        ):
            named = msgspec.structs.replace(
                item, supersedes=memory_id, expected_version=expected_version
            )
            (outcome,) = self._writes.write(container_tag, [named], actor)
            return outcome
        vector = self._embedder.embed([item.content])[0]
        verdict = self.detector.verdict(item.content, vector)
        with self._gate.lock(container_tag):
            self._gate.settle(container_tag)
            latest = self._memories.latest(memory_id)
            if latest is None:
                raise NotFound(f"no memory {memory_id!r}")
            if expected_version is not None and latest.version != expected_version:
                raise VersionConflict(
                    f"memory {memory_id!r} is at version {latest.version}, not {expected_version}"
                )
            if unchanged(latest, item):
                raise NothingChanged(
                    f"this correction changes nothing: version {latest.version} of memory"
                    f" {memory_id!r} already says it (the same text, isStatic, metadata,"
                    " context and fact time)"
                )
            version_id = new_id("ver")
            event = MemoryEdited(
                memory_id=memory_id,
                version_id=version_id,
                version=latest.version + 1,
                supersedes_version_id=latest.version_id,
                container_tag=container_tag,
                **version_fields(self._sealer, memory_subject(memory_id), item, vector),
            )
            events: list[AnyEvent] = [event]
            if verdict.flagged:
                events.append(verdict.recorded(memory_id, version_id, container_tag))
            seq = self._recorder.record([Draft(actor, e) for e in events]).seqs[0]
        return WriteOutcome(
            memory_id=memory_id,
            version_id=version_id,
            version=latest.version + 1,
            status="superseded",
            seq=seq,
            flags=tuple(verdict.reasons),
        )

    @decided_again
    def forget(self, memory_id: str, reason: str, actor: Actor) -> int:
        self._refuse(actor)
        chain = self._existing(memory_id)
        with self._gate.lock(chain.container_tag):
            self._gate.settle(chain.container_tag)
            # Sealed under the lock: an erase of a chain split from this one may re-key it.
            sealed = self._sealer.seal_text(memory_subject(memory_id), reason)
            return self._record(actor, ChainForgotten(memory_id=memory_id, reason=sealed))

    @decided_again
    def restore(self, memory_id: str, actor: Actor) -> int:
        self._refuse(actor)
        chain = self._existing(memory_id)
        with self._gate.lock(chain.container_tag):
            self._gate.settle(chain.container_tag)
            return self._record(actor, ChainRestored(memory_id=memory_id))

    @decided_again
    def erase(self, memory_id: str, actor: Actor) -> int:
        """Hard delete: destroy the chain's key, then record it; projections purge the text.
        A chain split from another takes its copied text out of that one's history too
        (``splitting.py``)."""
        self._refuse(actor)
        chain = self._existing(memory_id)
        with self._gate.lock(chain.container_tag):
            self._gate.settle(chain.container_tag)
            also = self._splits.erasure_drafts(memory_id, actor)
            self._keys.destroy(memory_subject(memory_id))
            event = SubjectErased(
                subject=memory_subject(memory_id),
                scope="memory",
                memory_id=memory_id,
                container_tag=chain.container_tag,
            )
            return self._recorder.record([Draft(actor, event), *also]).seqs[0]

    @decided_again
    def set_profile(
        self, container_tag: str, static: list[str], dynamic: list[str], actor: Actor
    ) -> int:
        """Replace a container's profile, sealed under its own key. The poisoning detector
        reads every fact: a flagged profile is stored all the same, its reasons in the event
        (the writer's trust is charged for it, as for a flagged memory)."""
        self._refuse(actor)
        profile = msgspec.json.encode({"static": static, "dynamic": dynamic})
        sealed = self._sealer.seal(profile_subject(container_tag), profile)
        facts = [*static, *dynamic]
        read = self.detector.reads_vectors and facts
        flags = self.detector.flags_of(facts, list(self._embedder.embed(facts)) if read else None)
        event = ProfileUpdated(container_tag=container_tag, profile=sealed, flags=flags)
        with self._gate.lock(container_tag):
            return self._record(actor, event)

    def _refuse(self, actor: Actor) -> None:
        if self._trust is not None:
            self._trust.refuse_distrusted(actor)

    def _existing(self, memory_id: str) -> VersionRow:
        latest = self._memories.latest(memory_id)
        if latest is None:
            raise NotFound(f"no memory {memory_id!r}")
        if latest.erased:
            raise KeyDestroyed(f"memory {memory_id!r} was erased")
        return latest

    def _record(self, actor: Actor, event: AnyEvent) -> int:
        """Append atomically and apply; the event's seq."""
        return self._recorder.record([Draft(actor, event)]).seqs[0]


def unchanged(latest: VersionRow, item: NewMemory) -> bool:
    """Whether an edit would say what the latest version says already: the same text (as an
    exact duplicate is known, ``content_hash``: whitespace and line endings aside), isStatic,
    metadata and context, and no other fact time."""
    return (
        latest.content is not None
        and content_hash(latest.content) == content_hash(item.content)
        and latest.is_static == item.is_static
        and (latest.metadata or None) == (item.metadata or None)
        and latest.context == item.context
        and (item.observed_at is None or parse_instant(item.observed_at) == latest.observed_at)
    )
