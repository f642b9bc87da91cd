"""What enters a container whole: a document (chunked, embedded, recorded once) and the chains
of an import (history restored as it was, into new chains only).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Literal

import msgspec

from ..embedding.port import Embedder, embed_rows_bytes
from ..errors import InvalidInput
from ..eventlog import Actor, Appended, Draft, Sealer
from ..eventlog.events import AnyEvent, DocumentIngested
from ..eventlog.subjects import document_subject
from ..projections.documents.chunking import RECIPE as CHUNKER
from ..projections.documents.chunking import chunk
from ..projections.documents.projection import CHUNK_SLOTS, DocumentProjection
from .oversight.trust import Trust
from .poisoning.head import Detector
from .record import Recorder, decided_again
from .writing.fresh_ids import FreshIds
from .writing.gate import Gate
from .writing.versions import new_id, seal_metadata


class DocumentOutcome(msgspec.Struct, frozen=True, kw_only=True):
    document_id: str
    status: Literal["created", "deduplicated"]
    chunks: int
    seq: int
    flags: list[str] = []  # the poisoning detector's reasons (stored all the same)


class Ingest:
    def __init__(
        self,
        *,
        recorder: Recorder,
        gate: Gate,
        sealer: Sealer,
        fresh: FreshIds,
        documents: DocumentProjection,
        embedder: Embedder,
        detector: Detector,
        trust: Trust | None = None,
    ) -> None:
        self._detector = detector
        self._trust = trust
        self._recorder = recorder
        self._gate = gate
        self._sealer = sealer
        self._fresh = fresh
        self._documents = documents
        self._embedder = embedder

    @decided_again
    def ingest_document(
        self,
        container_tag: str,
        content: str,
        actor: Actor,
        *,
        title: str | None = None,
        metadata: dict[str, object] | None = None,
        also: Callable[[str], AnyEvent] | None = None,
    ) -> DocumentOutcome:
        """Chunk, embed and record a document; an identical one in the container is reused.

        ``also`` makes an event from the new document's id, appended with it atomically (an
        import records where the document came from)."""
        self.refuse_distrusted(actor)
        pieces = chunk(content)
        if not pieces:
            raise InvalidInput("the document has no text")
        if len(pieces) >= CHUNK_SLOTS:
            raise InvalidInput(f"the document has more than {CHUNK_SLOTS - 1} chunks")
        existing = self._documents.duplicate(container_tag, content)
        vectors = None if existing is not None else self._embedder.embed([p.text for p in pieces])
        # Recall serves its chunks into prompts as it serves memories: read as they are.
        # The rules read the title and the whole text; a head each chunk by its vector.
        whole = [*([] if title is None else [title]), content]
        if vectors is not None and self._detector.reads_vectors:
            chunks = [p.text for p in pieces]
            flags = self._detector.flags_of([*whole, *chunks], [*([None] * len(whole)), *vectors])
        else:
            flags = self._detector.flags_of(whole)
        with self._gate.lock(container_tag):
            existing = self._documents.duplicate(container_tag, content)
            if existing is not None or vectors is None:
                assert existing is not None
                return DocumentOutcome(
                    document_id=existing.document_id,
                    status="deduplicated",
                    chunks=existing.chunk_count,
                    seq=existing.seq,
                )
            document_id = new_id("doc")
            subject = document_subject(document_id)
            event = DocumentIngested(
                document_id=document_id,
                container_tag=container_tag,
                content=self._sealer.seal_text(subject, content),
                title=None if title is None else self._sealer.seal_text(subject, title),
                metadata=seal_metadata(self._sealer, subject, metadata),
                chunk_embeddings=self._sealer.seal(subject, embed_rows_bytes(vectors)),
                chunker=CHUNKER,
                flags=flags,
            )
            events = [event, *([] if also is None else [also(document_id)])]
            seq = self._recorder.record([Draft(actor, e) for e in events]).seqs[0]
        return DocumentOutcome(
            document_id=document_id, status="created", chunks=len(pieces), seq=seq, flags=flags
        )

    @decided_again
    def import_chains(
        self,
        container_tag: str,
        count: int,
        build: Callable[[Sequence[str]], Sequence[Sequence[AnyEvent]]],
        actor: Actor,
    ) -> list[Appended | InvalidInput]:
        """Append ``count`` chains restored from an export, each atomically, under fresh ids.

        No dedup or supersede decision: an import restores history as it was, and only into
        new chains, so it can never give a chain a second latest version. ``build`` makes each
        chain's events from its id (whose key is already durable). The container's lock is held
        until the chains are in the projections, so writes decided after them see them.
        """
        self.refuse_distrusted(actor)
        ids = self._fresh.take(count)
        with self._gate.lock(container_tag):
            self._gate.settle(container_tag)
            try:
                chains = build(ids)
            except BaseException:
                self._fresh.give_back(ids)
                raise
            submitted: list[Future[Appended] | InvalidInput] = []
            for memory_id, events in zip(ids, chains, strict=True):
                try:
                    submitted.append(self._recorder.submit([Draft(actor, e) for e in events]))
                except InvalidInput as exc:  # refused before the log took it: the id is unused
                    self._fresh.give_back([memory_id])
                    submitted.append(exc)
            results = [s if isinstance(s, InvalidInput) else s.result() for s in submitted]
            seqs = [r.seqs[-1] for r in results if isinstance(r, Appended) and r.seqs]
            if seqs:
                self._recorder.apply(max(seqs))
        return results

    @decided_again
    def import_links(self, container_tag: str, events: Sequence[AnyEvent], actor: Actor) -> int:
        """Append the links an import restores (``memory.linked``), atomically; the seq of the
        first."""
        self.refuse_distrusted(actor)
        with self._gate.lock(container_tag):
            return self._recorder.record([Draft(actor, e) for e in events]).seqs[0]

    def refuse_distrusted(self, actor: Actor) -> None:
        if self._trust is not None:
            self._trust.refuse_distrusted(actor)
