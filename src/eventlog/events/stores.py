"""Events of the other stores: profiles, documents, and the embedder a data dir is pinned to."""

from __future__ import annotations

import msgspec

from .base import Event, Sealed


class ProfileUpdated(Event, frozen=True, kw_only=True, tag="profile.updated"):
    """A container's profile (static and dynamic facts) changed. ``flags``: the poisoning
    detector's reasons, if it flagged a fact of it (stored all the same, charged to the
    writer's trust)."""

    container_tag: str
    profile: Sealed
    flags: list[str] = []


class DocumentIngested(Event, frozen=True, kw_only=True, tag="document.ingested"):
    """A document was added to a container."""

    document_id: str
    container_tag: str
    content: Sealed
    title: Sealed | None = None
    metadata: Sealed | None = None
    chunk_embeddings: Sealed | None = None  # float32 rows, one per chunk, in chunk order
    chunker: str = ""  # the recipe that cut the chunks, so a rebuild cuts the same ones
    flags: list[str] = []  # the poisoning detector's reasons, as for a profile


class DocumentForgotten(Event, frozen=True, kw_only=True, tag="document.forgotten"):
    """A document is hidden from search and lists, and kept (a rollback of its writer)."""

    document_id: str
    container_tag: str
    reason: Sealed | None = None


class DocumentRestored(Event, frozen=True, kw_only=True, tag="document.restored"):
    """A forgotten document is served again (the undo of that rollback)."""

    document_id: str
    container_tag: str


class EmbedderPinned(Event, frozen=True, kw_only=True, tag="embedder.pinned"):
    """The data dir was bound to one embedder identity on first use."""

    name: str
    dimension: int
    digest: str


class ReembedStarted(Event, frozen=True, kw_only=True, tag="embedder.reembed_started"):
    """The data dir moves to another embedder (``mnemolog reembed``): from here its vectors
    are this embedder's, those stored before come in ``vectors.reembedded`` events, and
    ``embedder.reembed_completed`` says every one has. Until then the server refuses to start."""

    name: str
    dimension: int
    digest: str
    previous_name: str
    previous_digest: str


class ReembeddedVector(msgspec.Struct, frozen=True, kw_only=True):
    """The new vector of what the event at ``seq`` stored: a memory version's (its
    ``version_id``), or a document's chunks (float32 rows in chunk order)."""

    seq: int
    embedding: Sealed  # sealed under the same subject as what it embeds
    version_id: str | None = None


class VectorsReembedded(Event, frozen=True, kw_only=True, tag="vectors.reembedded"):
    """One batch of a re-embedding: vectors made by the embedder of ``digest``."""

    digest: str
    versions: list[ReembeddedVector] = []
    documents: list[ReembeddedVector] = []


class ReembedCompleted(Event, frozen=True, kw_only=True, tag="embedder.reembed_completed"):
    """Every version and document stored before the re-embedding started has its new vector
    (those whose text was erased have none)."""

    digest: str
    versions: int
    documents: int
    seconds: float
