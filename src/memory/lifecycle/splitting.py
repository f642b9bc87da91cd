"""Splitting a version back out of the chain that hid it, and erasing what a split shares.

An older write decision took any close text for an update: "The beta service listens on port
5432" became version 2 of "The alpha service listens on port 5432", and hid it. A split makes
the hidden version live again as a chain of its own (``memory.split``): a copy of its fields,
sealed under the new chain's key. The source chain's history is kept as it was (the log is
never rewritten); the version stays in it, superseded, and the two chains name each other.

Both chains now hold the copied text: the new chain under its own key, the source chain (in
the event that first made the version) under the source's. Erasing the source destroys its key
and leaves the new chain whole. Erasing the new chain must also erase the text in the source's
history without touching the rest of that chain: every other field of the source chain is
re-sealed under a new generation of its key (``KeyStore.rekey``), the old generation is
destroyed, and a ``subject.erased`` of scope ``version`` tells the projections to drop that one
version's text.
"""

from __future__ import annotations

from ...errors import KeyDestroyed, NotFound, NothingToSplit
from ...eventlog import Actor, Draft, EventLog, KeyStore, Sealer
from ...eventlog.events import (
    MemorySplit,
    Sealed,
    SubjectErased,
    VersionEvent,
)
from ...eventlog.subjects import memory_subject
from ...projections.memories.projection import MemoryProjection
from ..oversight.trust import Trust
from ..record import Recorder, decided_again
from ..writing.gate import Gate
from ..writing.submitted import WriteOutcome
from ..writing.versions import new_id
from .rekeying import kept_fields, rekey_keeping


class Splits:
    def __init__(
        self,
        *,
        recorder: Recorder,
        gate: Gate,
        log: EventLog,
        keys: KeyStore,
        sealer: Sealer,
        memories: MemoryProjection,
        trust: Trust | None = None,
    ) -> None:
        self._trust = trust
        self._recorder = recorder
        self._gate = gate
        self._log = log
        self._keys = keys
        self._sealer = sealer
        self._memories = memories

    @decided_again
    def split(self, memory_id: str, version_id: str, actor: Actor) -> WriteOutcome:
        """A new live chain from a version a later version of ``memory_id`` replaced."""
        if self._trust is not None:
            self._trust.refuse_distrusted(actor)
        latest = self._memories.latest(memory_id)
        if latest is None:
            raise NotFound(f"no memory {memory_id!r}")
        if latest.erased:
            raise KeyDestroyed(f"memory {memory_id!r} was erased")
        container_tag = latest.container_tag
        with self._gate.lock(container_tag):
            self._gate.settle(container_tag)
            chain = self._memories.chain(memory_id)
            assert chain is not None  # chains are never deleted, only erased
            version = next((v for v in chain.versions if v.version_id == version_id), None)
            if version is None:
                raise NotFound(f"memory {memory_id!r} has no version {version_id!r}")
            if version.valid_to is None:
                raise NothingToSplit(
                    f"version {version_id!r} is the current version of {memory_id!r}:"
                    " no later version replaced it"
                )
            done = self._memories.split_into(memory_id)
            earlier = next((r for r in done if r.source_version_id == version_id), None)
            if earlier is not None:
                raise NothingToSplit(
                    f"version {version_id!r} was split out already, into {earlier.memory_id!r}"
                )
            made = self._origin(version.row_id)
            new_memory = new_id("mem")
            subject = memory_subject(new_memory)
            content = self._sealer.open(made.content)
            if content is None:
                raise KeyDestroyed(f"version {version_id!r} of {memory_id!r} was erased")
            new_version = new_id("ver")
            event = MemorySplit(
                memory_id=new_memory,
                version_id=new_version,
                container_tag=container_tag,
                is_static=made.is_static,
                observed_at=made.observed_at,
                source_memory_id=memory_id,
                source_version_id=version_id,
                content=self._sealer.seal(subject, content),
                embedding=self._copy(made.embedding, subject),
                metadata=self._copy(made.metadata, subject),
                context=self._copy(made.context, subject),
            )
            seq = self._recorder.record([Draft(actor, event)]).seqs[0]
        return WriteOutcome(
            memory_id=new_memory, version_id=new_version, version=1, status="created", seq=seq
        )

    def erasure_drafts(self, memory_id: str, actor: Actor) -> list[Draft]:
        """Called under the container's lock, before ``memory_id``'s key is destroyed: when the
        chain was split from a chain still live, that chain is re-keyed without the copied
        version, and the drafts say so (a ``subject.erased`` of scope ``version``)."""
        origin = self._memories.split_from(memory_id)
        if origin is None:
            return []
        source = self._memories.chain(origin.source_memory_id)
        if source is None or source.erased:
            return []  # its key, and the text it held, are gone already
        self._rekey_without(
            origin.source_memory_id, origin.source_version_id, source.versions[0].row_id
        )
        return [
            Draft(
                actor,
                SubjectErased(
                    subject=memory_subject(origin.source_memory_id),
                    scope="version",
                    memory_id=origin.source_memory_id,
                    container_tag=source.container_tag,
                    version_id=origin.source_version_id,
                ),
            )
        ]

    def _origin(self, seq: int) -> VersionEvent:
        """The event that made a version (its row id is that event's seq)."""
        stored = next(iter(self._log.read(seq, limit=1)), None)
        event = None if stored is None or stored.seq != seq else stored.record.event
        if not isinstance(event, VersionEvent):
            raise NotFound(f"no version was made at seq {seq}")
        return event

    def _copy(self, sealed: Sealed | None, subject: str) -> Sealed | None:
        """A sealed field opened and sealed again under ``subject``."""
        opened = None if sealed is None else self._sealer.open(sealed)
        return None if opened is None else self._sealer.seal(subject, opened)

    def _rekey_without(self, memory_id: str, version_id: str, from_seq: int) -> None:
        """Re-seal every readable field of the chain under a new generation of its key, but
        the erased version's own fields and the evidence of events about it (the words that
        differed, its words among them); then destroy the old generation."""
        rekey_keeping(
            self._keys,
            self._sealer,
            memory_subject(memory_id),
            (
                sealed
                for stored in self._log.read(from_seq)
                for sealed in kept_fields(stored.record.event, version_id)
            ),
        )
