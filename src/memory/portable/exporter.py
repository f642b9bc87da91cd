"""The export of a store (``GET /export``): chains with every version, profiles and documents,
as one document.

Erased chains and documents are left out (their text is gone). Embeddings and traces are never
exported: the file stays small, works across embedder tiers, and receipts stay on the device.
Imported versions and documents are exported with the provenance their file stated, so an
export of an import equals the file imported, ids aside.
"""

from __future__ import annotations

import time

import msgspec

from ...clock import iso
from ...projections.documents.projection import DocumentProjection, DocumentRow
from ...projections.memories.projection import MemoryProjection
from ...projections.memories.rows import ChainView, ImportRow
from .format import Chain, Document, Export, Link, Profile, Provenance, SplitSource, Version

_PAGE = 500


def export(
    memories: MemoryProjection,
    documents: DocumentProjection,
    *,
    container_tag: str | None = None,
    now_ns: int | None = None,
) -> Export:
    chains: list[Chain] = []
    for memory_id in memories.chain_ids(container_tag):
        view = memories.chain(memory_id)
        if view is None or view.erased:  # erased since the ids were listed
            continue
        chain = _chain(view, memories.imports_of("memory", memory_id))
        links = [
            Link(id=link.target_memory_id, similarity=link.similarity, reason=link.reason)
            for link in memories.links_of(memory_id)
            if link.memory_id == memory_id
        ]
        if chain is not None and links:
            chain = msgspec.structs.replace(chain, possibly_updates=links)
        split = memories.split_from(memory_id)
        if chain is not None and split is not None:
            source = SplitSource(id=split.source_memory_id, version_id=split.source_version_id)
            chain = msgspec.structs.replace(chain, split_from=source)
        if chain is not None:
            chains.append(chain)
    profiles = [
        Profile(
            container_tag=tag,
            static=[str(f) for f in _facts(profile.get("static"))],
            dynamic=[str(f) for f in _facts(profile.get("dynamic"))],
        )
        for tag, profile in memories.profiles(container_tag)
    ]
    docs = [
        _document(row, memories.imports_of("document", row.document_id))
        for row in _all_documents(documents, container_tag)
        if row.content is not None
    ]
    return Export(
        exported_at=iso(time.time_ns() if now_ns is None else now_ns) or "",
        container_tag=container_tag,
        memories=chains,
        profiles=profiles,
        documents=docs,
    )


def _chain(view: ChainView, imports: list[ImportRow]) -> Chain | None:
    origins = {row.row_id: row.origin for row in imports}
    versions = []
    for row in view.versions:
        if row.content is None:  # unreadable: its key is gone
            return None
        origin = origins.get(row.row_id)
        provenance = (
            Provenance(agent_id=row.agent_id, protocol=row.protocol, kind=row.kind)
            if origin is None
            else Provenance(agent_id=origin.agent_id, protocol=origin.protocol, kind=origin.kind)
        )
        versions.append(
            Version(
                id=row.version_id,
                version=row.version,
                content=row.content,
                is_static=row.is_static,
                metadata=row.metadata,  # type: ignore[arg-type]  # JSON scalars, as written
                observed_at=row.observed_at_text or iso(row.observed_at),
                valid_from=iso(row.valid_from) or "",
                valid_to=iso(row.valid_to),
                provenance=provenance,
                context=msgspec.UNSET if row.context is None else row.context,
            )
        )
    return Chain(
        id=view.memory_id,
        container_tag=view.container_tag,
        created_at=iso(view.created_at),
        forgotten=view.forgotten,
        forgotten_at=iso(view.forgotten_at),
        forgotten_reason=view.forgotten_reason,
        versions=versions,
    )


def _document(row: DocumentRow, imports: list[ImportRow]) -> Document:
    assert row.content is not None
    if imports:
        origin = imports[0].origin
        provenance = Provenance(
            agent_id=origin.agent_id,
            protocol=origin.protocol,
            kind=origin.kind,
            created_at=iso(origin.created_at),
        )
    else:
        provenance = Provenance(
            agent_id=row.agent_id,
            protocol=row.protocol,
            kind="document.ingested",
            created_at=iso(row.created_at),
        )
    return Document(
        id=row.document_id,
        container_tag=row.container_tag,
        title=row.title,
        content=row.content,
        metadata=row.metadata,  # type: ignore[arg-type]
        provenance=provenance,
    )


def _all_documents(documents: DocumentProjection, container_tag: str | None) -> list[DocumentRow]:
    """Every document not erased, by container, then in the order they were ingested."""
    rows: list[DocumentRow] = []
    while True:
        page, total = documents.list_documents(
            container_tag=container_tag, limit=_PAGE, offset=len(rows), include_forgotten=True
        )
        rows.extend(page)
        if not page or len(rows) >= total:
            break
    return sorted(rows, key=lambda r: (r.container_tag, r.seq))


def _facts(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []
