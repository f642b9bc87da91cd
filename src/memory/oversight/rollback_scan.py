"""What an agent did since a seq, read from the log: the input of a rollback's plan.

The log is read, not the projections, because only it says who forgot or restored a chain
and who set each profile.
"""

from __future__ import annotations

import msgspec

from ...eventlog import EventLog
from ...eventlog.events import (
    ChainForgotten,
    ChainRestored,
    DocumentForgotten,
    DocumentIngested,
    DocumentRestored,
    MemoryEdited,
    MemoryImported,
    MemorySplit,
    MemorySuperseded,
    MemoryWritten,
    ProfileUpdated,
    RollbackUndone,
    SubjectErased,
)


class Activity(msgspec.Struct, kw_only=True):
    """An agent's changes in a stretch of the log, and the last toggle of every chain."""

    created: list[str] = msgspec.field(default_factory=list)  # chains it made, in order
    changed: list[str] = msgspec.field(default_factory=list)  # chains it gave a version
    # memory id -> (agent, "forgotten" or "restored") of the stretch's last forget or restore
    toggled: dict[str, tuple[str, str]] = msgspec.field(default_factory=dict)
    # container -> (agent, seq) of each profile update of the stretch, in order
    profiles: dict[str, list[tuple[str, int]]] = msgspec.field(default_factory=dict)
    erased: list[str] = msgspec.field(default_factory=list)  # chains it hard-deleted
    # Versions an undo of a rollback of the agent put back: its own again, by whoever undid.
    copies: set[str] = msgspec.field(default_factory=set)
    touched: set[str] = msgspec.field(default_factory=set)  # chains anyone changed
    documents: list[str] = msgspec.field(default_factory=list)  # documents it ingested
    # documents anyone forgot, restored or erased
    touched_documents: set[str] = msgspec.field(default_factory=set)


def scan(log: EventLog, agent_id: str, from_seq: int) -> Activity:
    """``agent_id``'s changes from ``from_seq`` (inclusive) to the head."""
    found = Activity()
    for stored in log.read(max(from_seq, 1)):
        record = stored.record
        event = record.event
        mine = record.actor.agent_id == agent_id
        memory_id = getattr(event, "memory_id", None)
        match event:
            case MemoryWritten() | MemorySplit():
                if mine:
                    found.created.append(event.memory_id)
            case MemoryImported():
                if mine and event.chain is not None:
                    found.created.append(event.memory_id)
            case MemorySuperseded() | MemoryEdited():
                if mine and event.memory_id not in found.changed:
                    found.changed.append(event.memory_id)
            case ChainForgotten():
                found.toggled[event.memory_id] = (record.actor.agent_id, "forgotten")
            case ChainRestored():
                found.toggled[event.memory_id] = (record.actor.agent_id, "restored")
            case DocumentIngested():
                if mine:
                    found.documents.append(event.document_id)
            case DocumentForgotten() | DocumentRestored():
                found.touched_documents.add(event.document_id)
            case SubjectErased():
                if mine and event.memory_id is not None and event.scope == "memory":
                    found.erased.append(event.memory_id)
                if event.scope == "document":
                    found.touched_documents.add(event.subject.removeprefix("document:"))
            case ProfileUpdated():
                found.profiles.setdefault(event.container_tag, []).append(
                    (record.actor.agent_id, stored.seq)
                )
            case RollbackUndone() if event.agent_id == agent_id:
                # Appended after the events of the undo: what they did is the agent's again.
                for undone in event.restored:
                    found.toggled[undone] = (agent_id, "restored")
                for undone in event.forgotten:
                    found.toggled[undone] = (agent_id, "forgotten")
                for reverted in event.reverted:
                    found.copies.add(reverted.version_id)
                    if reverted.memory_id not in found.changed:
                        found.changed.append(reverted.memory_id)
                for reset in event.profiles:
                    updates = found.profiles.get(reset.container_tag)
                    if updates:
                        updates[-1] = (agent_id, updates[-1][1])
                memory_id = None
            case _:
                memory_id = None  # a recall, a link, a dedup: no chain changed
        if isinstance(memory_id, str):
            found.touched.add(memory_id)
    return found


def last_profile_before(log: EventLog, container_tag: str, before_seq: int) -> int | None:
    """The seq of the container's last profile update before ``before_seq``, if any."""
    last = None
    if before_seq <= 1:
        return None
    for stored in log.read(1, limit=before_seq - 1):
        event = stored.record.event
        if isinstance(event, ProfileUpdated) and event.container_tag == container_tag:
            last = stored.seq
    return last


def first_seq_at(log: EventLog, ts: int) -> int:
    """The first seq recorded at or after ``ts`` (UTC ns), or the seq after the head: a
    binary search, since the log's times never decrease."""
    low, high = 1, log.head().seq + 1
    while low < high:
        middle = (low + high) // 2
        found = next(iter(log.read(middle, limit=1)), None)
        if found is None or found.record.ts >= ts:
            high = middle
        else:
            low = middle + 1
    return low
