"""What changed between two instants, with the event that did each change."""

from __future__ import annotations

import msgspec

from ..clock import iso
from ..eventlog import EventLog

# Event kinds that change what is believed, and the word a diff uses for each.
CHANGES = {
    "memory.written": "new",
    "memory.superseded": "superseded",
    "memory.edited": "edited",
    "memory.imported": "imported",
    "chain.forgotten": "forgotten",
    "chain.restored": "restored",
    "subject.erased": "erased",
    "profile.updated": "profile",
    "document.ingested": "document",
}


class Change(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    at: str
    change: str
    kind: str
    agent_id: str
    protocol: str
    container_tag: str | None
    memory_id: str | None
    version: int | None


def changes_between(
    log: EventLog, after_seq: int, up_to_seq: int, *, container_tag: str | None = None
) -> list[Change]:
    """The changes made by records ``after_seq < seq <= up_to_seq``, oldest first."""
    container_of: dict[str, str] = {}  # memory id -> container, for events naming only the id
    out: list[Change] = []
    for stored in log.read(1, limit=up_to_seq):
        record = stored.record
        event = record.event
        memory_id = getattr(event, "memory_id", None)
        container = getattr(event, "container_tag", None)
        if isinstance(memory_id, str) and isinstance(container, str):
            container_of.setdefault(memory_id, container)
        if stored.seq <= after_seq or record.kind not in CHANGES:
            continue
        if container is None and isinstance(memory_id, str):
            container = container_of.get(memory_id)
        if container_tag is not None and container != container_tag:
            continue
        version = getattr(event, "version", None)
        out.append(
            Change(
                seq=stored.seq,
                at=iso(record.ts),
                change=CHANGES[record.kind],
                kind=record.kind,
                agent_id=record.actor.agent_id,
                protocol=record.actor.protocol,
                container_tag=container if isinstance(container, str) else None,
                memory_id=memory_id if isinstance(memory_id, str) else None,
                version=version if isinstance(version, int) else None,
            )
        )
    return out


def render_changes(changes: list[Change]) -> str:
    if not changes:
        return "no changes"
    return "\n".join(
        f"  seq {c.seq}  {c.at}  {c.change:<10} {c.memory_id or c.container_tag or '-'}"
        + (f" v{c.version}" if c.version is not None else "")
        + f"  by {c.agent_id} ({c.protocol})"
        for c in changes
    )
