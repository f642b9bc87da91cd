"""Events of an import: chains and documents restored from an export file."""

from __future__ import annotations

import msgspec

from .base import Event, Sealed


class ImportOrigin(msgspec.Struct, frozen=True, kw_only=True):
    """Provenance an export file states for an imported version or document: who made it, how
    and when, in the store it came from. Kept beside the importer's own provenance (the
    record's actor), never in its place."""

    agent_id: str | None = None
    protocol: str | None = None
    kind: str | None = None
    created_at: int | None = None


class ImportedChain(msgspec.Struct, frozen=True, kw_only=True):
    """Chain-level facts of an imported chain, carried by the event of its first version."""

    digest: Sealed  # sha256 of the chain as the file held it: a later import of it is skipped
    created_at: int
    forgotten: bool = False
    forgotten_at: int | None = None
    forgotten_reason: Sealed | None = None


class MemoryImported(Event, frozen=True, kw_only=True, tag="memory.imported"):
    """One version of a chain restored from an export file, with its validity window as the
    file states it (not stamped from the log time). A chain's versions are appended together,
    in order, under a fresh id; the first carries the chain-level facts."""

    memory_id: str
    version_id: str
    version: int
    container_tag: str
    content: Sealed
    valid_from: int
    valid_to: int | None
    source_memory_id: str
    source_version_id: str | None = None
    embedding: Sealed | None = None
    metadata: Sealed | None = None
    context: Sealed | None = None  # what the memory answers or continues
    is_static: bool = False
    observed_at: str | None = None
    chain: ImportedChain | None = None
    origin: ImportOrigin | None = None
    # On a chain's first version, when the file says the chain was split from a version of
    # another chain of the file that is in the store: that chain and version, in the store.
    split_from_memory_id: str | None = None
    split_from_version_id: str | None = None


class DocumentImported(Event, frozen=True, kw_only=True, tag="document.imported"):
    """The document ingested just before, in the same append, came from an export file."""

    document_id: str
    source_document_id: str
    origin: ImportOrigin | None = None
