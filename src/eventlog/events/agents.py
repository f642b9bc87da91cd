"""Events about agents: trust signals, flags, keys, quarantine and rollback."""

from __future__ import annotations

from typing import Literal

import msgspec

from .base import Event, Sealed


class AgentSignal(Event, frozen=True, kw_only=True, tag="agent.signal"):
    """Feedback about an agent's behaviour, the input of its trust score."""

    agent_id: str
    signal: Literal["positive", "negative", "neutral"]
    memory_id: str | None = None
    weight: float = 1.0
    label: str | None = None  # a machine-readable reason code, never free text
    note: Sealed | None = None


class MemoryFlagged(Event, frozen=True, kw_only=True, tag="memory.flagged"):
    """The poisoning detector found instructions aimed at later readers in a write's text.
    Appended with the write, whose version is stored all the same; recall shows it flagged,
    and it is a negative trust signal for the writer. Recorded, not recomputed: the rules
    change, what they said of a write then does not."""

    memory_id: str
    version_id: str
    container_tag: str
    reasons: list[str]  # the detector's stable codes (``memory/poisoning/rules.py``)
    detector: str  # which rules decided


class AgentKeyAdded(Event, frozen=True, kw_only=True, tag="agent.key_added"):
    """An API key was made for an agent. Only the digest of its secret is kept: the secret is
    shown once, to whoever made the key, and is in no event or log."""

    key_id: str  # public, part of the token: how a request's key is found
    agent_id: str  # the agent's name, stamped on every event its requests cause
    digest: str  # sha256 of the secret, hex
    containers: list[str] | None = None  # the containers it may read and write (None: all)
    # May quarantine and roll back agents, as the user (``local``) may; never scoped.
    admin: bool = False


class AgentKeyRevoked(Event, frozen=True, kw_only=True, tag="agent.key_revoked"):
    """An API key stopped opening the door, for good."""

    key_id: str


class AgentQuarantined(Event, frozen=True, kw_only=True, tag="agent.quarantined"):
    """An agent's memories were hidden from recall and from the lists agents read, and kept:
    every version it wrote, until it is released."""

    agent_id: str
    reason: str | None = None  # a short note by whoever quarantined it, never memory text


class AgentReleased(Event, frozen=True, kw_only=True, tag="agent.released"):
    """A quarantine ended: the agent's memories are served again."""

    agent_id: str


class RevertedChain(msgspec.Struct, frozen=True, kw_only=True):
    """A chain a rollback (or its undo) gave an earlier version back, as a new version."""

    memory_id: str
    version_id: str  # the new version, a copy of ``restored_version_id``
    restored_version_id: str
    replaced_version_id: str  # the version that was current before


class ProfileReset(msgspec.Struct, frozen=True, kw_only=True):
    """A container's profile a rollback (or its undo) set back to an earlier one."""

    container_tag: str
    restored_seq: int | None  # the ``profile.updated`` whose profile it set again (None: empty)
    replaced_seq: int  # the one that was current before


class AgentRolledBack(Event, frozen=True, kw_only=True, tag="agent.rolled_back"):
    """What an agent wrote or changed since ``since_seq`` was undone, by the events appended
    with this one: the chains it made forgotten, the chains it changed given back the version
    before its change, the chains it forgot restored and those it restored forgotten again,
    the profiles it set put back. ``erased``: its hard deletes, which nothing can undo."""

    rollback_id: str
    agent_id: str
    since_seq: int
    forgotten: list[str] = []
    reverted: list[RevertedChain] = []
    restored: list[str] = []
    reforgotten: list[str] = []
    profiles: list[ProfileReset] = []
    erased: list[str] = []
    documents: list[str] = []  # the documents it ingested, forgotten (``document.forgotten``)


class RollbackUndone(Event, frozen=True, kw_only=True, tag="agent.rollback_undone"):
    """A rollback was undone by the events appended with this one: what it forgot restored,
    what it gave back replaced again by the agent's version, and so on. Items changed since
    the rollback are left as they are and listed in ``skipped``."""

    rollback_id: str
    agent_id: str
    restored: list[str] = []
    reverted: list[RevertedChain] = []
    forgotten: list[str] = []
    profiles: list[ProfileReset] = []
    documents: list[str] = []  # the documents the rollback forgot, restored
    skipped: list[str] = []  # memory ids, document ids and container tags
