"""Request and response bodies of the REST API, camelCase on the wire (seed API reference)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

import msgspec

from ..clock import iso, parse_as_of_instant, parse_iso
from ..errors import InvalidInput
from ..memory import ChainView, ChunkRow, DocumentRow, LinkRow, SplitRow, VersionRow

Content = Annotated[str, msgspec.Meta(min_length=1, max_length=100_000)]
Tag = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]


class _Body(msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True):
    pass


MemoryId = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]


class MemoryIn(_Body, frozen=True, kw_only=True):
    content: Content
    is_static: bool = False
    metadata: dict[str, str | int | float | bool | None] | None = None
    observed_at: str | None = None
    context: Content | None = None
    supersedes: MemoryId | None = None
    expected_version: Annotated[int, msgspec.Meta(ge=1)] | None = None
    auto_supersede: bool = True


class WriteMemories(_Body, frozen=True, kw_only=True):
    container_tag: Tag
    memories: Annotated[list[MemoryIn], msgspec.Meta(min_length=1, max_length=1000)]


class PatchMemory(_Body, frozen=True, kw_only=True):
    content: Content
    is_static: bool | None = None
    metadata: dict[str, str | int | float | bool | None] | None = None
    observed_at: str | None = None
    context: Content | None = None
    expected_version: Annotated[int, msgspec.Meta(ge=1)] | None = None


class Forget(_Body, frozen=True, kw_only=True):
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]


Fact = Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]


class PostDocument(_Body, frozen=True, kw_only=True):
    container_tag: Tag
    content: Annotated[str, msgspec.Meta(min_length=1)]
    title: Annotated[str, msgspec.Meta(max_length=1000)] | None = None
    metadata: dict[str, str | int | float | bool | None] | None = None


class PutProfile(_Body, frozen=True, kw_only=True):
    container_tag: Tag
    static: Annotated[list[Fact], msgspec.Meta(max_length=200)] = msgspec.field(
        default_factory=list
    )
    dynamic: Annotated[list[Fact], msgspec.Meta(max_length=200)] = msgspec.field(
        default_factory=list
    )


class Search(_Body, frozen=True, kw_only=True):
    q: Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)]
    container_tag: Tag | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10
    search_mode: Literal["memories", "documents", "hybrid"] = "memories"
    recency: bool = True
    diversify: bool | None = None
    as_of: str | None = None
    include_forgotten: bool = False


def parse_observed_at(text: str | None) -> str | None:
    """An ``observedAt``: ISO 8601 with an explicit timezone (kept as given), else 400."""
    if text is None:
        return None
    moment = parse_iso(text, "observedAt")
    if moment.tzinfo is None:
        raise InvalidInput("observedAt needs an explicit timezone, e.g. 2026-07-03T12:00:00Z")
    return text


def parse_as_of(text: str | None) -> int | None:
    """``asOf``: a date-time with an explicit timezone, or a plain date (UTC midnight)."""
    return None if text is None else parse_as_of_instant(text)


def version_json(row: VersionRow, *, windows: bool) -> dict[str, object]:
    body: dict[str, object] = {
        "id": row.memory_id,
        "versionId": row.version_id,
        "version": row.version,
        "containerTag": row.container_tag,
        "content": row.content,
        "context": row.context,
        "isStatic": row.is_static,
        "metadata": row.metadata,
        "observedAt": row.observed_at_text or iso(row.observed_at),
        "forgotten": row.forgotten,
        "provenance": {
            "agentId": row.agent_id,
            "protocol": row.protocol,
            "createdAt": iso(row.valid_from),
            "seq": row.seq,
            "kind": row.kind,
        },
    }
    if windows:
        body["validFrom"] = iso(row.valid_from)
        body["validTo"] = iso(row.valid_to)
    return body


def chain_json(
    chain: ChainView,
    links: Sequence[LinkRow] = (),
    split_from: SplitRow | None = None,
    split_into: Sequence[SplitRow] = (),
) -> dict[str, object]:
    """A chain with its versions and windows, its links (memories it may update,
    ``possiblyUpdates``, and memories that may update it, ``possiblyUpdatedBy``) and its splits
    (the version it was split from, the chains split from its versions)."""
    return {
        "id": chain.memory_id,
        "containerTag": chain.container_tag,
        "createdAt": iso(chain.created_at),
        "latestVersion": chain.latest_version,
        "forgotten": chain.forgotten,
        "forgottenAt": iso(chain.forgotten_at),
        "forgottenReason": chain.forgotten_reason,
        "erased": chain.erased,
        "versions": [version_json(v, windows=True) for v in chain.versions],
        "possiblyUpdates": [
            _link_json(link, link.target_memory_id)
            for link in links
            if link.memory_id == chain.memory_id
        ],
        "possiblyUpdatedBy": [
            _link_json(link, link.memory_id)
            for link in links
            if link.target_memory_id == chain.memory_id
        ],
        "splitFrom": None
        if split_from is None
        else {"id": split_from.source_memory_id, "versionId": split_from.source_version_id},
        "splitInto": [
            {"id": row.memory_id, "versionId": row.source_version_id} for row in split_into
        ],
    }


class SplitMemory(_Body, frozen=True, kw_only=True):
    version_id: MemoryId  # the version a later one replaced


def _link_json(link: LinkRow, other: str) -> dict[str, object]:
    return {
        "id": other,
        "similarity": round(link.similarity, 6),
        "reason": link.reason,
        "at": iso(link.at),
        "seq": link.seq,
    }


def chunk_json(chunk: ChunkRow | None) -> dict[str, object]:
    assert chunk is not None
    return {
        "type": "document",
        "documentId": chunk.document_id,
        "chunkIndex": chunk.index,
        "title": chunk.title,
        "containerTag": chunk.container_tag,
        "content": chunk.text,
        "start": chunk.start,
        "end": chunk.end,
    }


def document_json(document: DocumentRow, *, content: bool) -> dict[str, object]:
    body: dict[str, object] = {
        "id": document.document_id,
        "containerTag": document.container_tag,
        "title": document.title,
        "metadata": document.metadata,
        "chunks": document.chunk_count,
        "erased": document.erased,
        "provenance": {
            "agentId": document.agent_id,
            "protocol": document.protocol,
            "createdAt": iso(document.created_at),
            "seq": document.seq,
        },
    }
    if content:
        body["content"] = document.content
    return body
