"""Erasing more than one memory: a whole container (a user), one document, one profile.

Erasure is crypto-shredding (``docs/erasure.md``): a subject's key is destroyed, and the
projections drop the text they kept of it. A container holds several subjects: each of its
memory chains, each of its documents, its profile, and its own key (the queries, tool
arguments and conversation excerpts recorded for it). Erasing the container destroys every one
of those keys in one commit and one compaction of the key store, then appends one
``subject.erased`` per subject and a ``container.erased`` receipt, counts and no text, in one
append. The container's own key and its profile's are renewed rather than only destroyed: a
write after the erasure seals under a fresh generation, a new subject no old key opened.
"""

from __future__ import annotations

import msgspec

from ...errors import ContainerInUse, KeyDestroyed, NotFound
from ...eventlog import Actor, Draft, EventLog, KeyStore, Sealer
from ...eventlog.events import (
    AnyEvent,
    ContainerErased,
    ProfileUpdated,
    Protocol,
    Sealed,
    SubjectErased,
)
from ...eventlog.subjects import (
    container_subject,
    document_subject,
    memory_subject,
    profile_subject,
)
from ...projections.documents.projection import DocumentProjection
from ...projections.memories.projection import MemoryProjection
from ...projections.traces import TraceProjection
from ..agents import Agents, Caller
from ..oversight.trust import Trust
from ..record import Recorder, decided_again
from ..writing.gate import Gate
from .rekeying import kept_fields, rekey_keeping, under


class ErasureReceipt(msgspec.Struct, frozen=True, kw_only=True):
    """What a container's erasure destroyed; ``repeated``: answered again, as nothing was
    written to the container since."""

    receipt: ContainerErased
    seq: int  # of the receipt event
    erased_at: int  # ns since the epoch
    repeated: bool = False


class Erasure:
    def __init__(
        self,
        *,
        recorder: Recorder,
        gate: Gate,
        log: EventLog,
        keys: KeyStore,
        sealer: Sealer,
        memories: MemoryProjection,
        documents: DocumentProjection,
        traces: TraceProjection,
        agents: Agents,
        trust: Trust | None = None,
    ) -> None:
        self._recorder = recorder
        self._gate = gate
        self._log = log
        self._keys = keys
        self._sealer = sealer
        self._memories = memories
        self._documents = documents
        self._traces = traces
        self._agents = agents
        self._trust = trust

    @decided_again
    def container(
        self,
        container_tag: str,
        caller: Caller,
        *,
        force: bool = False,
        protocol: Protocol = "rest",
    ) -> ErasureReceipt:
        """Erase everything of ``container_tag``. A key scoped to other containers finds no
        such container; one that another agent's key is scoped to is refused unless
        ``force`` (that agent would lose what it keeps there), which only a caller that
        reaches every container may use: a scoped key can never erase another agent's."""
        caller.owns(container_tag, f"container {container_tag!r}")
        actor = caller.actor(protocol)
        self._refuse(actor)
        with self._gate.lock(container_tag):
            self._gate.settle(container_tag)
            chains = self._memories.chain_ids(container_tag)
            documents = self._documents.of_container(container_tag)
            profile = self._memories.profile(container_tag) is not None
            own_key = self._keys.current(container_subject(container_tag))
            sealed_since = self._keys.key_for(own_key) is not None
            if not (chains or documents or profile or sealed_since):
                last = self._memories.last_erasure(container_tag)
                if last is None:
                    raise NotFound(f"no container {container_tag!r}")
                seq, at, receipt = last
                return ErasureReceipt(receipt=receipt, seq=seq, erased_at=at, repeated=True)
            if not force or caller.scoped:
                self._refuse_in_use(container_tag, caller, may_force=not caller.scoped)
            recalls, turns = self._traces.sealed_in(container_tag)
            receipt = ContainerErased(
                container_tag=container_tag,
                memories=len(chains),
                versions=self._memories.version_count(container_tag),
                documents=len(documents),
                chunks=sum(d.chunk_count for d in documents),
                profile=profile,
                recalls=recalls,
                turns=turns,
            )
            self._keys.erase(
                [memory_subject(m) for m in chains]
                + [document_subject(d.document_id) for d in documents],
                renewed=[container_subject(container_tag), profile_subject(container_tag)],
            )
            erased: list[AnyEvent] = [
                *(
                    SubjectErased(
                        subject=memory_subject(m),
                        scope="memory",
                        memory_id=m,
                        container_tag=container_tag,
                    )
                    for m in chains
                ),
                *(
                    SubjectErased(
                        subject=document_subject(d.document_id),
                        scope="document",
                        container_tag=container_tag,
                    )
                    for d in documents
                ),
                SubjectErased(
                    subject=profile_subject(container_tag),
                    scope="profile",
                    container_tag=container_tag,
                ),
                SubjectErased(
                    subject=container_subject(container_tag),
                    scope="container",
                    container_tag=container_tag,
                ),
            ]
            drafts = [Draft(actor, event) for event in [*erased, receipt]]
            appended = self._recorder.record(drafts)
        seq = appended.seqs[-1]
        last = self._memories.last_erasure(container_tag)
        at = last[1] if last is not None and last[0] == seq else 0
        return ErasureReceipt(receipt=receipt, seq=seq, erased_at=at)

    @decided_again
    def document(self, document_id: str, caller: Caller, protocol: Protocol = "rest") -> int:
        """Erase one document: its text, title, metadata, chunks and their vectors."""
        row = self._documents.get(document_id)
        if row is None:
            raise NotFound(f"no document {document_id!r}")
        caller.owns(row.container_tag, f"document {document_id!r}")
        if row.erased:
            raise KeyDestroyed(f"document {document_id!r} was erased")
        actor = caller.actor(protocol)
        self._refuse(actor)
        subject = document_subject(document_id)
        with self._gate.lock(row.container_tag):
            self._keys.erase([subject])
            event = SubjectErased(
                subject=subject, scope="document", container_tag=row.container_tag
            )
            return self._recorder.record([Draft(actor, event)]).seqs[0]

    @decided_again
    def profile(self, container_tag: str, caller: Caller, protocol: Protocol = "rest") -> int:
        """Erase a container's profile, and only it: a later profile is a new subject."""
        caller.owns(container_tag, f"profile of container {container_tag!r}")
        actor = caller.actor(protocol)
        self._refuse(actor)
        with self._gate.lock(container_tag):
            self._gate.settle(container_tag)
            if self._memories.profile(container_tag) is None:
                raise NotFound(f"no profile for container {container_tag!r}")
            self._rekey_without_profiles(container_tag)
            subject = profile_subject(container_tag)
            self._keys.erase([], renewed=[subject])
            event = SubjectErased(subject=subject, scope="profile", container_tag=container_tag)
            return self._recorder.record([Draft(actor, event)]).seqs[0]

    def _refuse(self, actor: Actor) -> None:
        if self._trust is not None:
            self._trust.refuse_distrusted(actor)

    def _refuse_in_use(self, container_tag: str, caller: Caller, *, may_force: bool) -> None:
        """Refuse a container another agent's live key is scoped to. The answer names no key:
        a key's id is its owner's to know."""
        in_use = any(
            key.revoked_at is None
            and key.containers is not None
            and container_tag in key.containers
            and key.agent_id != caller.agent_id
            for key in self._agents.keys()  # noqa: SIM118 (a method, not a dict)
        )
        if not in_use:
            return
        if may_force:
            how = "erase it with force to erase it all the same"
        else:
            how = "a key scoped to containers cannot force it, one that reaches every container can"
        raise ContainerInUse(f"container {container_tag!r} is in use by another agent: {how}")

    def _rekey_without_profiles(self, container_tag: str) -> None:
        """Profiles written before they had a subject of their own were sealed under the
        container's key: its other fields are re-sealed under a new generation of it, those
        profiles left out, and the old generation destroyed. One pass over the log."""
        subject = container_subject(container_tag)
        kept: list[Sealed] = []
        legacy = False
        for stored in self._log.read():
            event = stored.record.event
            if (
                isinstance(event, ProfileUpdated)
                and event.container_tag == container_tag
                and under(event.profile, subject)
            ):
                legacy = True
                continue
            kept.extend(sealed for sealed in kept_fields(event) if under(sealed, subject))
        if legacy:
            rekey_keeping(self._keys, self._sealer, subject, kept)
