"""Rollback of an agent since a seq, and its undo: each one append, so each is one event.

A rollback undoes what the agent wrote or changed since then, with the events of the other
operations, appended together with an ``agent.rolled_back`` that lists them (last, so that a
later change is one after it):

- a chain it made (written, split out, imported) is forgotten;
- a chain it gave a new version (superseded, edited) whose current version is still its own
  gets back the last version nobody else wrote since then, as a new version
  (``memory.reverted``, a copy of it); a chain somebody changed after it is left alone;
- a chain whose last forget or restore was its own is restored or forgotten again;
- a profile it set last is set back to the one before (empty, if none was);
- its hard deletes cannot be undone: they are listed.

The memories projection's digest (``MemoryAudit.digest``) is then what it was before the
agent's changes, when nobody else changed the same chains since. An undo reverses each item
the same way, unless the item was changed after the rollback (then it is skipped, and listed).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import msgspec

from ...clock import iso
from ...errors import NotFound, RollbackAlreadyUndone
from ...eventlog import Actor, Draft, EventLog, Sealer
from ...eventlog.events import (
    AgentRolledBack,
    AnyEvent,
    ChainForgotten,
    ChainRestored,
    DocumentForgotten,
    DocumentRestored,
    MemoryReverted,
    ProfileReset,
    ProfileUpdated,
    RevertedChain,
    RollbackUndone,
)
from ...eventlog.subjects import memory_subject, profile_subject
from ...projections.documents.projection import DocumentProjection
from ...projections.memories.projection import MemoryProjection
from ...projections.memories.rows import VersionRow
from ...projections.oversight import OversightProjection, RollbackRow
from ..agents import check_agent_name
from ..record import Recorder, decided_again
from ..writing.gate import Gate
from ..writing.versions import new_id, seal_metadata
from .rollback_scan import Activity, first_seq_at, last_profile_before, scan

_EMPTY_PROFILE = msgspec.json.encode({"static": [], "dynamic": []})


class Rollbacks:
    def __init__(
        self,
        *,
        recorder: Recorder,
        gate: Gate,
        log: EventLog,
        sealer: Sealer,
        memories: MemoryProjection,
        oversight: OversightProjection,
        documents: DocumentProjection,
    ) -> None:
        self._recorder = recorder
        self._documents = documents
        self._gate = gate
        self._log = log
        self._sealer = sealer
        self._memories = memories
        self._oversight = oversight

    def seq_at(self, ts: int) -> int:
        """The first seq recorded at or after an instant (UTC ns)."""
        return first_seq_at(self._log, ts)

    def get(self, rollback_id: str) -> RollbackRow | None:
        return self._oversight.rollback(rollback_id)

    def of(self, agent_id: str) -> list[RollbackRow]:
        return self._oversight.rollbacks(agent_id)

    # --- rollback ------------------------------------------------------------------------

    @decided_again
    def rollback(self, agent_id: str, since_seq: int, actor: Actor) -> RollbackRow | None:
        """Undo the agent's changes from ``since_seq`` on; None (nothing appended) when there
        is nothing to undo."""
        check_agent_name(agent_id)
        since_seq = max(since_seq, 1)
        rollback_id = new_id("rbk")
        containers = self._containers(scan(self._log, agent_id, since_seq))
        with self._locked(containers):
            # Again under the locks: what changed since the first read counts too.
            drafts, event = self._plan(agent_id, since_seq, rollback_id, actor)
            if not drafts and not event.erased:
                return None
            self._recorder.record([*drafts, Draft(actor, event)])
        made = self._oversight.rollback(rollback_id)
        assert made is not None
        return made

    def preview(self, agent_id: str, since_seq: int) -> AgentRolledBack:
        """What a rollback of the agent from ``since_seq`` would do now (the event it would
        append, listing each item), appending nothing."""
        check_agent_name(agent_id)
        since_seq = max(since_seq, 1)
        actor = Actor(agent_id=agent_id, protocol="rest")  # the drafts are thrown away
        return self._plan(agent_id, since_seq, "rbk_preview", actor)[1]

    def _plan(
        self, agent_id: str, since_seq: int, rollback_id: str, actor: Actor
    ) -> tuple[list[Draft], AgentRolledBack]:
        """The events that undo the agent's changes from ``since_seq``, and the
        ``agent.rolled_back`` that lists them."""
        note = f"rollback {rollback_id} of agent {agent_id!r} since seq {since_seq}"
        found = scan(self._log, agent_id, since_seq)
        drafts: list[Draft] = []
        event = AgentRolledBack(rollback_id=rollback_id, agent_id=agent_id, since_seq=since_seq)
        created = set(found.created)
        for memory_id in dict.fromkeys(found.created):
            latest = self._memories.latest(memory_id)
            if latest is not None and not latest.forgotten and not latest.erased:
                drafts.append(self._forget(actor, memory_id, note))
                event.forgotten.append(memory_id)
        for memory_id in found.changed:
            if memory_id in created:
                continue
            target = self._before(memory_id, agent_id, since_seq, found.copies)
            if target is not None:
                draft, reverted = self._revert(actor, target[0], target[1], rollback_id)
                drafts.append(draft)
                event.reverted.append(reverted)
        for memory_id, (who, what) in found.toggled.items():
            latest = self._memories.latest(memory_id)
            if who != agent_id or memory_id in created or latest is None or latest.erased:
                continue
            if what == "forgotten" and latest.forgotten:
                drafts.append(self._restore(actor, memory_id, note))
                event.restored.append(memory_id)
            elif what == "restored" and not latest.forgotten:
                drafts.append(self._forget(actor, memory_id, note))
                event.reforgotten.append(memory_id)
        for tag, updates in found.profiles.items():
            if updates[-1][0] != agent_id:
                continue
            earlier = [seq for who, seq in updates if who != agent_id]
            restored = earlier[-1] if earlier else last_profile_before(self._log, tag, since_seq)
            drafts.append(self._profile(actor, tag, restored))
            event.profiles.append(
                ProfileReset(container_tag=tag, restored_seq=restored, replaced_seq=updates[-1][1])
            )
        for document_id in dict.fromkeys(found.documents):
            row = self._documents.get(document_id)
            if row is not None and not row.erased and not row.forgotten:
                drafts.append(self._forget_document(actor, row.document_id, row.container_tag))
                event.documents.append(document_id)
        event.erased.extend(found.erased)
        return drafts, event

    def _before(
        self, memory_id: str, agent_id: str, since_seq: int, copies: set[str]
    ) -> tuple[VersionRow, VersionRow] | None:
        """(current, the version to give back) of a chain whose current version the agent
        wrote since ``since_seq`` (or an undo put back, ``copies``); None if somebody else's
        is current, or none is left."""
        chain = self._memories.chain(memory_id)
        if chain is None or chain.erased or not chain.versions:
            return None

        def theirs(v: VersionRow) -> bool:
            return (v.agent_id == agent_id and v.seq >= since_seq) or v.version_id in copies

        current = chain.versions[-1]
        if not theirs(current):
            return None
        earlier = [v for v in chain.versions if not theirs(v) and v.content is not None]
        return (current, earlier[-1]) if earlier else None

    # --- undo ----------------------------------------------------------------------------

    @decided_again
    def undo(self, rollback_id: str, actor: Actor) -> RollbackRow:
        found = self._oversight.rollback(rollback_id)
        if found is None:
            raise NotFound(f"no rollback {rollback_id!r}")
        if found.undo is not None:
            raise RollbackAlreadyUndone(f"rollback {rollback_id!r} was undone already")
        done = found.event
        note = f"undo of rollback {rollback_id} of agent {done.agent_id!r}"
        chains = [*done.forgotten, *done.restored, *done.reforgotten]
        chains += [r.memory_id for r in done.reverted]
        containers = {row.container_tag for m in chains if (row := self._memories.latest(m))}
        containers |= {p.container_tag for p in done.profiles}
        with self._locked(containers):
            again = self._oversight.rollback(rollback_id)
            if again is None or again.undo is not None:
                raise RollbackAlreadyUndone(f"rollback {rollback_id!r} was undone already")
            since = scan(self._log, "", found.seq + 1)  # anyone's changes after it
            event = RollbackUndone(rollback_id=rollback_id, agent_id=done.agent_id)
            drafts: list[Draft] = []
            for memory_id in done.forgotten + done.reforgotten:
                if memory_id in since.touched:
                    event.skipped.append(memory_id)
                    continue
                drafts.append(self._restore(actor, memory_id, note))
                event.restored.append(memory_id)
            for memory_id in done.restored:
                if memory_id in since.touched:
                    event.skipped.append(memory_id)
                    continue
                drafts.append(self._forget(actor, memory_id, note))
                event.forgotten.append(memory_id)
            for reverted in done.reverted:
                rows = self._memories.by_version_ids(
                    [reverted.version_id, reverted.replaced_version_id]
                )
                current, replaced = (
                    rows.get(reverted.version_id),
                    rows.get(reverted.replaced_version_id),
                )
                if (
                    reverted.memory_id in since.touched
                    or current is None
                    or replaced is None
                    or replaced.content is None
                ):
                    event.skipped.append(reverted.memory_id)
                    continue
                draft, again_reverted = self._revert(actor, current, replaced, rollback_id)
                drafts.append(draft)
                event.reverted.append(again_reverted)
            for document_id in done.documents:
                document = self._documents.get(document_id)
                if document_id in since.touched_documents or document is None or document.erased:
                    event.skipped.append(document_id)
                    continue
                restored = DocumentRestored(
                    document_id=document_id, container_tag=document.container_tag
                )
                drafts.append(Draft(actor, restored))
                event.documents.append(document_id)
            for reset in done.profiles:
                if reset.container_tag in since.profiles:
                    event.skipped.append(reset.container_tag)
                    continue
                drafts.append(self._profile(actor, reset.container_tag, reset.replaced_seq))
                rollbacks_own = last_profile_before(self._log, reset.container_tag, found.seq)
                event.profiles.append(
                    ProfileReset(
                        container_tag=reset.container_tag,
                        restored_seq=reset.replaced_seq,
                        replaced_seq=rollbacks_own or found.seq,
                    )
                )
            self._recorder.record([*drafts, Draft(actor, event)])
        undone = self._oversight.rollback(rollback_id)
        assert undone is not None
        return undone

    # --- the events ----------------------------------------------------------------------

    def _forget(self, actor: Actor, memory_id: str, note: str) -> Draft:
        reason = self._sealer.seal_text(memory_subject(memory_id), note)
        return Draft(actor, ChainForgotten(memory_id=memory_id, reason=reason))

    def _forget_document(self, actor: Actor, document_id: str, container_tag: str) -> Draft:
        return Draft(actor, DocumentForgotten(document_id=document_id, container_tag=container_tag))

    def _restore(self, actor: Actor, memory_id: str, note: str) -> Draft:
        reason = self._sealer.seal_text(memory_subject(memory_id), note)
        return Draft(actor, ChainRestored(memory_id=memory_id, reason=reason))

    def _revert(
        self, actor: Actor, current: VersionRow, target: VersionRow, rollback_id: str
    ) -> tuple[Draft, RevertedChain]:
        """A new version of ``current``'s chain, a copy of ``target``: its text, embedding,
        context and metadata sealed again under the chain's key, its observed time kept."""
        assert target.content is not None
        subject = memory_subject(current.memory_id)
        seal = self._sealer
        vectors = dict(self._memories.vectors_of([target.row_id]))
        vector = vectors.get(target.row_id)
        version_id = new_id("ver")
        event = MemoryReverted(
            memory_id=current.memory_id,
            version_id=version_id,
            version=current.version + 1,
            supersedes_version_id=current.version_id,
            container_tag=current.container_tag,
            content=seal.seal_text(subject, target.content),
            embedding=None if vector is None else seal.seal(subject, vector),
            metadata=seal_metadata(seal, subject, target.metadata),
            context=None if target.context is None else seal.seal_text(subject, target.context),
            is_static=target.is_static,
            observed_at=target.observed_at_text or iso(target.observed_at),
            restores_version_id=target.version_id,
            rollback_id=rollback_id,
        )
        reverted = RevertedChain(
            memory_id=current.memory_id,
            version_id=version_id,
            restored_version_id=target.version_id,
            replaced_version_id=current.version_id,
        )
        return Draft(actor, event), reverted

    def _profile(self, actor: Actor, container_tag: str, restored_seq: int | None) -> Draft:
        """The container's profile set to the one recorded at ``restored_seq`` (None, or one
        erased since: empty)."""
        profile = _EMPTY_PROFILE
        if restored_seq is not None:
            found = next(iter(self._log.read(restored_seq, limit=1)), None)
            event: AnyEvent | None = None if found is None else found.record.event
            if isinstance(event, ProfileUpdated):
                profile = self._sealer.open(event.profile) or _EMPTY_PROFILE
        sealed = self._sealer.seal(profile_subject(container_tag), profile)
        return Draft(actor, ProfileUpdated(container_tag=container_tag, profile=sealed))

    # --- locks ---------------------------------------------------------------------------

    def _containers(self, found: Activity) -> set[str]:
        chains = {*found.created, *found.changed, *found.toggled}
        tags = {row.container_tag for m in chains if (row := self._memories.latest(m))}
        documents = {
            document.container_tag
            for d in found.documents
            if (document := self._documents.get(d)) is not None
        }
        return tags | documents | set(found.profiles)

    @contextlib.contextmanager
    def _locked(self, containers: set[str]) -> Iterator[None]:
        """Every container's lock, in one order (no two rollbacks wait on each other), with
        its in-flight writes settled."""
        with contextlib.ExitStack() as stack:
            for tag in sorted(containers):
                stack.enter_context(self._gate.lock(tag))
                self._gate.settle(tag)
            yield
