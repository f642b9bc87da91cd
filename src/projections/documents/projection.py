"""The documents read model: documents and their chunks in ``documents.sqlite3``.

Chunks are cut again from the content when a ``document.ingested`` record is applied (the
chunker is deterministic and its recipe is in the event); their vectors come from the event.
A chunk's ``label`` (``seq * CHUNK_SLOTS + index``) names it in the document indexes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from collections.abc import Set as AbstractSet
from pathlib import Path

import msgspec

from ...embedding.port import split_rows
from ...eventlog import Sealer, StoredRecord
from ...eventlog.events import (
    DocumentForgotten,
    DocumentIngested,
    DocumentRestored,
    ReembedStarted,
    SubjectErased,
    VectorsReembedded,
)
from ..sqlite import SqliteProjection
from ..vectors.exact import StoredVectors, stored_matrix
from .chunking import chunk

CHUNK_SLOTS = 1 << 16  # chunks a document may have: labels stay unique and below 2**63

SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    document_id TEXT PRIMARY KEY,
    container_tag TEXT NOT NULL,
    title TEXT,
    content TEXT,
    content_hash TEXT,
    metadata TEXT,
    chunk_count INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    agent_id TEXT NOT NULL,
    protocol TEXT NOT NULL,
    erased INTEGER NOT NULL DEFAULT 0,
    forgotten INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS documents_by_hash ON documents(container_tag, content_hash);
CREATE TABLE IF NOT EXISTS chunks (
    label INTEGER PRIMARY KEY,
    document_id TEXT NOT NULL REFERENCES documents(document_id),
    idx INTEGER NOT NULL,
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    text TEXT,
    vector BLOB
);
"""


class DocumentRow(msgspec.Struct, frozen=True, kw_only=True):
    document_id: str
    container_tag: str
    title: str | None
    content: str | None
    metadata: dict[str, object] | None
    chunk_count: int
    seq: int
    created_at: int
    agent_id: str
    protocol: str
    erased: bool
    forgotten: bool = False


class ChunkRow(msgspec.Struct, frozen=True, kw_only=True):
    label: int
    document_id: str
    index: int
    start: int
    end: int
    text: str | None
    container_tag: str
    title: str | None


def document_hash(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()


_DOC_COLUMNS = (
    "document_id, container_tag, title, content, metadata, chunk_count, seq, created_at,"
    " agent_id, protocol, erased, forgotten"
)


class DocumentProjection(SqliteProjection):
    name = "documents"
    schema = SCHEMA
    # 2: chunks.vector, so a loaded index's matrix is filled with the vectors a fresh build
    # makes (hnswlib's copies can differ in the last bit, and a replay compares to 1e-9).
    # 3: documents.forgotten (a rollback hides what its agent ingested).
    schema_version = 3
    folds = (
        DocumentIngested,
        DocumentForgotten,
        DocumentRestored,
        SubjectErased,
        ReembedStarted,
        VectorsReembedded,
    )

    def __init__(self, path: Path, sealer: Sealer) -> None:
        self._sealer = sealer
        super().__init__(path)

    def _fold(self, stored: StoredRecord) -> bool:
        record = stored.record
        event = record.event
        if isinstance(event, DocumentIngested):
            content = self._sealer.open_text(event.content)
            title = None if event.title is None else self._sealer.open_text(event.title)
            metadata = None if event.metadata is None else self._sealer.open_text(event.metadata)
            chunks = [] if content is None else chunk(content)
            vectors = _rows(
                None
                if event.chunk_embeddings is None
                else self._sealer.open(event.chunk_embeddings),
                len(chunks),
            )
            self._conn.execute(
                "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
                (
                    event.document_id,
                    event.container_tag,
                    title,
                    content,
                    None if content is None else document_hash(content),
                    metadata,
                    len(chunks),
                    record.seq,
                    record.ts,
                    record.actor.agent_id,
                    record.actor.protocol,
                    int(content is None),
                ),
            )
            self._conn.executemany(
                "INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        record.seq * CHUNK_SLOTS + i,
                        event.document_id,
                        i,
                        c.start,
                        c.end,
                        c.text,
                        vectors[i],
                    )
                    for i, c in enumerate(chunks)
                ],
            )
        elif isinstance(event, DocumentForgotten | DocumentRestored):
            self._conn.execute(
                "UPDATE documents SET forgotten = ? WHERE document_id = ?",
                (int(isinstance(event, DocumentForgotten)), event.document_id),
            )
        elif isinstance(event, ReembedStarted):
            self._conn.execute("UPDATE chunks SET vector = NULL")  # another embedder's
        elif isinstance(event, VectorsReembedded):
            for item in event.documents:
                count = self._conn.execute(
                    "SELECT COUNT(*) FROM chunks WHERE label >= ? AND label < ?",
                    (item.seq * CHUNK_SLOTS, (item.seq + 1) * CHUNK_SLOTS),
                ).fetchone()[0]
                rows = _rows(self._sealer.open(item.embedding), int(count))
                self._conn.executemany(
                    "UPDATE chunks SET vector = ? WHERE label = ?",
                    [(v, item.seq * CHUNK_SLOTS + i) for i, v in enumerate(rows)],
                )
        elif isinstance(event, SubjectErased) and event.scope in ("document", "container"):
            if event.scope == "document":
                where, arg = "document_id = ?", event.subject.removeprefix("document:")
            else:
                where, arg = "container_tag = ?", str(event.container_tag)
            self._conn.execute(
                "UPDATE chunks SET text = NULL, vector = NULL WHERE document_id IN"
                f" (SELECT document_id FROM documents WHERE {where})",
                (arg,),
            )
            self._conn.execute(
                "UPDATE documents SET title = NULL, content = NULL, content_hash = NULL,"
                f" metadata = NULL, erased = 1 WHERE {where}",
                (arg,),
            )
            return True
        return False

    # --- queries ---------------------------------------------------------------------------

    def vectors_through(self, seq: int) -> StoredVectors | None:
        """Every stored chunk vector of a document ingested at or before ``seq``, by ascending
        label, as one matrix; None if they are not all of one width."""
        with self._lock:
            found = self._conn.execute(
                "SELECT label, vector FROM chunks WHERE label < ? AND vector IS NOT NULL"
                " ORDER BY label",
                ((seq + 1) * CHUNK_SLOTS,),
            ).fetchall()
        return stored_matrix(found)

    def duplicate(self, container_tag: str, content: str) -> DocumentRow | None:
        rows = self._documents(
            "WHERE container_tag = ? AND content_hash = ? ORDER BY seq LIMIT 1",
            (container_tag, document_hash(content)),
        )
        return rows[0] if rows else None

    def get(self, document_id: str) -> DocumentRow | None:
        rows = self._documents("WHERE document_id = ?", (document_id,))
        return rows[0] if rows else None

    def list_documents(
        self,
        *,
        container_tag: str | None,
        limit: int,
        offset: int,
        hidden_agents: AbstractSet[str] = frozenset(),
        include_forgotten: bool = False,
    ) -> tuple[list[DocumentRow], int]:
        """A page of live documents (not erased, nor forgotten unless asked), newest first;
        those ``hidden_agents`` wrote are left out."""
        live = "erased = 0" if include_forgotten else "erased = 0 AND forgotten = 0"
        where, args = (f"WHERE container_tag = ? AND {live}", [container_tag])
        if container_tag is None:
            where, args = f"WHERE {live}", []
        if hidden_agents:
            where += f" AND agent_id NOT IN ({','.join('?' * len(hidden_agents))})"
            args = [*args, *sorted(hidden_agents)]
        with self._lock:
            total = self._conn.execute(f"SELECT count(*) FROM documents {where}", args).fetchone()
        rows = self._documents(
            f"{where} ORDER BY seq DESC LIMIT ? OFFSET ?", (*args, limit, offset)
        )
        return rows, int(total[0])

    def of_container(self, container_tag: str) -> list[DocumentRow]:
        """Every document of a container not erased, oldest first."""
        return self._documents(
            "WHERE container_tag = ? AND erased = 0 ORDER BY seq", (container_tag,)
        )

    def chunks(self, labels: list[int]) -> dict[int, ChunkRow]:
        if not labels:
            return {}
        marks = ",".join("?" * len(labels))
        with self._lock:
            rows = self._conn.execute(
                "SELECT c.label, c.document_id, c.idx, c.start, c.end, c.text, d.container_tag,"
                " d.title FROM chunks c JOIN documents d ON d.document_id = c.document_id"
                f" WHERE c.label IN ({marks}) AND d.erased = 0",
                tuple(labels),
            ).fetchall()
        return {
            r[0]: ChunkRow(
                label=r[0],
                document_id=r[1],
                index=r[2],
                start=r[3],
                end=r[4],
                text=r[5],
                container_tag=r[6],
                title=r[7],
            )
            for r in rows
        }

    def chunk_at(self, document_id: str, index: int) -> ChunkRow | None:
        """A chunk by its document and index (how traces name chunks), erased or not."""
        with self._lock:
            row = self._conn.execute(
                "SELECT c.label, c.text, d.container_tag, d.title, c.start, c.end"
                " FROM chunks c JOIN documents d ON d.document_id = c.document_id"
                " WHERE c.document_id = ? AND c.idx = ?",
                (document_id, index),
            ).fetchone()
        if row is None:
            return None
        return ChunkRow(
            label=row[0],
            document_id=document_id,
            index=index,
            start=row[4],
            end=row[5],
            text=row[1],
            container_tag=row[2],
            title=row[3],
        )

    def live_labels(self, container_tag: str | None) -> frozenset[int]:
        sql = (
            "SELECT c.label FROM chunks c JOIN documents d ON d.document_id = c.document_id"
            " WHERE d.erased = 0 AND d.forgotten = 0"
        )
        args: tuple[object, ...] = ()
        if container_tag is not None:
            sql += " AND d.container_tag = ?"
            args = (container_tag,)
        with self._lock:
            return frozenset(int(r[0]) for r in self._conn.execute(sql, args))

    def labels_by_agents(self, agents: Collection[str], container_tag: str | None) -> set[int]:
        """Chunk labels of every document the agents wrote (in the container, if named)."""
        if not agents:
            return set()
        sql = (
            "SELECT c.label FROM chunks c JOIN documents d ON d.document_id = c.document_id"
            f" WHERE d.agent_id IN ({','.join('?' * len(agents))})"
        )
        args: list[object] = [*sorted(agents)]
        if container_tag is not None:
            sql += " AND d.container_tag = ?"
            args.append(container_tag)
        with self._lock:
            return {int(r[0]) for r in self._conn.execute(sql, args)}

    def labels_of(self, event: SubjectErased) -> list[int]:
        if event.scope == "document":
            where, arg = "document_id = ?", event.subject.removeprefix("document:")
        elif event.scope == "container" and event.container_tag is not None:
            where, arg = "container_tag = ?", event.container_tag
        else:
            return []
        with self._lock:
            rows = self._conn.execute(
                "SELECT label FROM chunks WHERE document_id IN"
                f" (SELECT document_id FROM documents WHERE {where})",
                (arg,),
            ).fetchall()
        return [int(r[0]) for r in rows]

    def _documents(self, tail: str, args: tuple[object, ...] | list[object]) -> list[DocumentRow]:
        with self._lock:
            rows = self._conn.execute(f"SELECT {_DOC_COLUMNS} FROM documents {tail}", args)
            fetched = rows.fetchall()
        return [
            DocumentRow(
                document_id=r[0],
                container_tag=r[1],
                title=r[2],
                content=r[3],
                metadata=None if r[4] is None else json.loads(r[4]),
                chunk_count=r[5],
                seq=r[6],
                created_at=r[7],
                agent_id=r[8],
                protocol=r[9],
                erased=bool(r[10]),
                forgotten=bool(r[11]),
            )
            for r in fetched
        ]


def _rows(raw: bytes | None, count: int) -> list[bytes | None]:
    """The ``count`` vectors of a document's chunks, one stored field each (Nones when it has
    none)."""
    rows = None if raw is None else split_rows(raw, count)
    return [None] * count if rows is None else list(rows)
