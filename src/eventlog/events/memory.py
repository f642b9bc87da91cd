"""Events of a memory chain: written, deduplicated, superseded, linked, edited, split,
forgotten, restored, erased; and the key of a write that may be retried."""

from __future__ import annotations

from typing import Literal

import msgspec

from .base import Event, Sealed


class MemoryWritten(Event, frozen=True, kw_only=True, tag="memory.written"):
    """A new chain starts with its first version."""

    memory_id: str
    version_id: str
    container_tag: str
    content: Sealed
    embedding: Sealed | None = None
    metadata: Sealed | None = None
    context: Sealed | None = None  # what the memory answers or continues
    is_static: bool = False
    observed_at: str | None = None


class MemoryDeduplicated(Event, frozen=True, kw_only=True, tag="memory.deduplicated"):
    """A write was an exact duplicate of a live version: no new version was made."""

    memory_id: str
    version_id: str
    container_tag: str


class Evidence(msgspec.Struct, frozen=True, kw_only=True):
    """Why a write was taken for a new version of another memory, or linked to it.

    ``rule``: ``automatic`` (the write decision judged the two texts; ``reason`` is its stable
    code), ``explicit`` (the write named the memory it corrects), ``imported`` (an export
    file stated it; ``reason`` is the one it gives) or ``arbiter`` (a local model ruled on a
    pair the write decision was unsure of; see ``memory.arbitrated``). ``differing`` holds the
    words of each text the other lacks (``{"removed": [...], "added": [...]}``, JSON), sealed
    under the newer memory's key like its content; a link, which joins two chains erasable
    apart, holds only the written memory's own (``added``).
    """

    rule: Literal["automatic", "explicit", "imported", "arbiter"]
    reason: str
    shared_words: float | None = None
    differing: Sealed | None = None


class MemorySuperseded(Event, frozen=True, kw_only=True, tag="memory.superseded"):
    """A write became version n+1 of an existing chain: judged a correction of its latest
    version, or naming it (``evidence`` says which; absent in logs written before it)."""

    memory_id: str
    version_id: str
    version: int
    supersedes_version_id: str
    container_tag: str
    content: Sealed
    similarity: float
    embedding: Sealed | None = None
    metadata: Sealed | None = None
    context: Sealed | None = None  # what the memory answers or continues
    is_static: bool = False
    observed_at: str | None = None
    evidence: Evidence | None = None


class MemoryLinked(Event, frozen=True, kw_only=True, tag="memory.linked"):
    """A new memory may update an older one: both stay live, and recall ranks the newer first
    and marks the older as possibly outdated. Appended with the write that made the newer."""

    memory_id: str  # the newer chain
    version_id: str
    target_memory_id: str  # the chain it may update
    target_version_id: str
    container_tag: str
    similarity: float
    evidence: Evidence


class MemoryArbitrated(Event, frozen=True, kw_only=True, tag="memory.arbitrated"):
    """A local model was asked whether a new memory is the same fact as, an update of, or a
    different fact from an older one the write decision was unsure of; appended with the write
    it decided. ``ruling`` None: no usable answer (``failure`` says why), both were kept."""

    container_tag: str
    memory_id: str  # the older memory, put to the model
    version_id: str  # the new version the write made (of that chain, or of a new one)
    ruling: Literal["same", "update", "different"] | None
    answer: Sealed | None = None  # the model's words, sealed under the container's key
    model: str | None = None
    failure: str | None = None
    latency_ms: float = 0.0


class MemoryEdited(Event, frozen=True, kw_only=True, tag="memory.edited"):
    """An explicit edit made version n+1 of a chain (never a mutation)."""

    memory_id: str
    version_id: str
    version: int
    supersedes_version_id: str
    container_tag: str
    content: Sealed
    embedding: Sealed | None = None
    metadata: Sealed | None = None
    context: Sealed | None = None  # what the memory answers or continues
    is_static: bool = False
    observed_at: str | None = None


class MemoryReverted(MemoryEdited, frozen=True, kw_only=True, tag="memory.reverted"):
    """A rollback of an agent (or the undo of one) made an earlier version of a chain its
    current one again: version n+1, a copy of ``restores_version_id``, sealed under the
    chain's key. Every fold takes it as the edit it also is."""

    restores_version_id: str
    rollback_id: str


class MemorySplit(Event, frozen=True, kw_only=True, tag="memory.split"):
    """A version an older write decision took for an update of its chain (and so hid) was
    split back out: a new live chain starts with a copy of it, sealed under its own key. The
    source chain keeps its history; the copied version stays in it, superseded."""

    memory_id: str  # the new chain
    version_id: str
    container_tag: str
    content: Sealed
    embedding: Sealed | None = None
    metadata: Sealed | None = None
    context: Sealed | None = None
    is_static: bool = False
    observed_at: str | None = None
    source_memory_id: str  # the chain it was split from
    source_version_id: str  # the version copied


class ChainForgotten(Event, frozen=True, kw_only=True, tag="chain.forgotten"):
    """A whole chain was forgotten, reversibly, for a reason."""

    memory_id: str
    reason: Sealed


class ChainRestored(Event, frozen=True, kw_only=True, tag="chain.restored"):
    """A forgotten chain was restored."""

    memory_id: str
    reason: Sealed | None = None


class SubjectErased(Event, frozen=True, kw_only=True, tag="subject.erased"):
    """A subject's data key was destroyed: its sealed fields are gone for good.

    Scope ``version``: one version of a chain whose text lives on in a chain split from it
    (``memory.split``) was erased with that chain; the rest of its own chain was re-sealed
    under a new key first (see ``docs/erasure.md``), so only that version's fields are gone.
    """

    subject: str
    scope: Literal["memory", "container", "document", "version", "profile"]
    memory_id: str | None = None
    container_tag: str | None = None
    version_id: str | None = None  # with scope ``version``


class ContainerErased(Event, frozen=True, kw_only=True, tag="container.erased"):
    """The receipt of a container's erasure, recorded right after the ``subject.erased`` of
    each subject it destroyed, in the same append: what was destroyed, counted, no text."""

    container_tag: str
    memories: int  # chains, all their versions with them
    versions: int
    documents: int
    chunks: int
    profile: bool
    recalls: int  # recalls whose query was sealed under the container's key
    turns: int  # proxied turns whose tool arguments were


class KeyedOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What became of one memory of a keyed write, as its answer said: ids and codes, never
    text. ``events``: how many records the write appended for it (its seq is the first)."""

    memory_id: str
    version_id: str
    version: int
    status: Literal["created", "superseded", "deduplicated"]
    events: int
    similarity: float | None = None
    reason: str | None = None
    flags: list[str] = msgspec.field(default_factory=list)
    possibly_updates: str | None = None
    possibly_outdated_by: str | None = None


class WriteKeyed(Event, frozen=True, kw_only=True, tag="write.keyed"):
    """A write sent with an ``Idempotency-Key``: appended last among its own events, in the
    same append, so the key is never recorded without its write nor the write without it.
    A retry with the key is answered ``outcomes`` again; the records of ``outcomes`` are the
    ones just before this one. ``key_digest`` is the key's sha256 (never the key);
    ``fingerprint`` the request's digest, sealed under the container's key like its
    queries (a digest of text can confirm a guess of it)."""

    container_tag: str
    agent_id: str
    key_digest: str
    fingerprint: Sealed
    outcomes: list[KeyedOutcome]
