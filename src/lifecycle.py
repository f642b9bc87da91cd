"""The memory lifecycle: the one choke point every write goes through, and forget, restore,
edit and erase.

A write is decided against the current state of its container: an exact duplicate of a live
latest version becomes a ``memory.deduplicated`` event and no new version; a near duplicate
(cosine at or above the supersede threshold, and at least half of the two texts' distinct
words shared) becomes version n+1 of that chain; anything else starts a new chain. Texts are
embedded in one batch before any lock.

Decisions for one container are serialised by a lock, but the lock is not held while the
append syncs to disk: a writer decides, submits its append (the log keeps submission order),
records the chain heads it is making as *in flight*, and releases the lock; the next writer
decides against the projections plus those in-flight heads. So concurrent writers to one
container share group commits, and two of them can still never extend the same version of a
chain. In-flight heads are dropped once their records are applied to the projections.
"""

from __future__ import annotations

import threading
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from typing import Literal, Protocol

import msgspec
import numpy as np
import numpy.typing as npt

from .chunking import RECIPE as CHUNKER
from .chunking import chunk
from .embedding.port import Embedder, embed_bytes
from .errors import InvalidInput, KeyDestroyed, NotFound, VersionConflict
from .eventlog import Actor, Appended, Draft, EventLog, KeyStore, Sealed, Sealer, StoredRecord
from .eventlog.events import (
    AnyEvent,
    ChainForgotten,
    ChainRestored,
    DocumentIngested,
    MemoryDeduplicated,
    MemoryEdited,
    MemorySuperseded,
    MemoryWritten,
    ProfileUpdated,
    SubjectErased,
)
from .fresh_ids import FreshIds
from .projections.documents import CHUNK_SLOTS, DocumentProjection
from .projections.fulltext import plain_words
from .projections.memories import MemoryProjection, VersionRow, content_hash
from .projections.runner import ProjectionRunner
from .subjects import container_subject, document_subject, memory_subject

Status = Literal["created", "superseded", "deduplicated"]

# A near duplicate must also restate the same words: at least this share of the two texts'
# distinct words (Jaccard) in common. A correction changes a few words of the same statement
# ("John prefers dark mode" -> "John prefers light mode": 0.6); two different remarks that an
# embedding finds close ("Thanks, Mel!" / "Thanks, Caroline!" by another speaker) rarely do.
MIN_SHARED_WORDS = 0.5


class NewMemory(msgspec.Struct, frozen=True, kw_only=True):
    """One memory to write, as validated by the API."""

    content: str
    is_static: bool = False
    metadata: dict[str, object] | None = None
    observed_at: str | None = None
    # What the memory answers or continues (the question a reply answers): searched by
    # keyword beside the content, never part of it.
    context: str | None = None


class WriteOutcome(msgspec.Struct, frozen=True, kw_only=True):
    memory_id: str
    version_id: str
    version: int
    status: Status
    similarity: float | None = None
    seq: int = 0


class DocumentOutcome(msgspec.Struct, frozen=True, kw_only=True):
    document_id: str
    status: Literal["created", "deduplicated"]
    chunks: int
    seq: int


class NearestLive(Protocol):
    """Finds the live latest versions of a container closest to a vector."""

    def nearest_many(
        self, container_tag: str, vectors: npt.NDArray[np.float32], k: int, at_least: float
    ) -> list[list[tuple[int, float]]]:
        """For each vector, the ``k`` best (row id, cosine similarity) pairs with a similarity
        of ``at_least`` or more, best first."""
        ...


class _Head(msgspec.Struct):
    """A chain head decided earlier in the same batch."""

    memory_id: str
    version_id: str
    version: int
    content_hash: str
    vector: npt.NDArray[np.float32] | None
    text: str = ""  # its words are compared only with a near duplicate's: split on demand


class _Heads:
    """Chain heads decided but not yet in the projections (this batch's and other writes'
    in flight), looked up by content hash and by similarity in one matrix product."""

    def __init__(self, heads: Sequence[_Head]) -> None:
        self._by_memory: dict[str, _Head] = {}
        self._by_hash: dict[str, _Head] = {}
        self._rows: list[_Head | None] = []
        self._row_of: dict[str, int] = {}
        self._matrix: npt.NDArray[np.float32] | None = None
        for head in heads:
            self.add(head)

    def __iter__(self) -> Iterator[_Head]:
        return iter(list(self._by_memory.values()))

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._by_memory

    def with_hash(self, digest: str) -> _Head | None:
        return self._by_hash.get(digest)

    def add(self, head: _Head) -> None:
        self.remove(head.memory_id)
        self._by_memory[head.memory_id] = head
        self._by_hash[head.content_hash] = head
        if head.vector is None:
            return
        row = len(self._rows)
        if self._matrix is None:
            self._matrix = np.zeros((16, head.vector.shape[0]), dtype=np.float32)
        elif row == self._matrix.shape[0]:
            self._matrix = np.concatenate([self._matrix, np.zeros_like(self._matrix)])
        self._matrix[row] = head.vector
        self._rows.append(head)
        self._row_of[head.memory_id] = row

    def remove(self, memory_id: str) -> None:
        head = self._by_memory.pop(memory_id, None)
        if head is None:
            return
        if self._by_hash.get(head.content_hash) is head:
            del self._by_hash[head.content_hash]
        row = self._row_of.pop(memory_id, None)
        if row is not None:
            self._rows[row] = None
            assert self._matrix is not None
            self._matrix[row] = 0.0  # a zero row is never at or above a positive threshold

    def closest(
        self, vector: npt.NDArray[np.float32], threshold: float
    ) -> tuple[_Head, float] | None:
        if self._matrix is None or not self._row_of:
            return None
        similarities = self._matrix[: len(self._rows)] @ vector
        row = int(np.argmax(similarities))
        head = self._rows[row]
        similarity = float(similarities[row])
        if head is None or similarity < threshold:
            return None
        return head, similarity


class SubmittedGroups:
    """Writes decided and submitted by ``Lifecycle.submit_groups``, not yet durable."""

    def __init__(
        self,
        results: list[list[WriteOutcome] | Exception],
        *,
        sync_to: Callable[[int, Sequence[StoredRecord]], object],
        land: Callable[[str, object], None],
    ) -> None:
        self._results = results
        self._sync_to = sync_to
        self._land = land
        # (group, container, in-flight token, the append, the outcomes without their seqs)
        self.decided: list[tuple[int, str, object, Future[Appended], list[WriteOutcome]]] = []

    def finish(self) -> list[list[WriteOutcome] | Exception]:
        """Wait until the appends are durable and applied; each group's outcomes or error."""
        results = self._results
        try:
            last = 0
            appended: list[StoredRecord] = []
            for n, _, _, future, outcomes in self.decided:
                try:
                    done = future.result()
                except Exception as exc:
                    results[n] = exc
                    continue
                seqs = done.seqs
                appended.extend(done.records)
                last = max(last, seqs[-1])
                results[n] = [
                    msgspec.structs.replace(o, seq=seq)
                    for o, seq in zip(outcomes, seqs, strict=True)
                ]
            if last:
                appended.sort(key=lambda r: r.seq)
                self._sync_to(last, appended)
        finally:
            self.abandon()
        return results

    def abandon(self) -> None:
        """Drop the in-flight heads (after ``finish``, or when it will never run)."""
        for _, container_tag, token, _, _ in self.decided:
            self._land(container_tag, token)


class Lifecycle:
    def __init__(
        self,
        *,
        log: EventLog,
        keys: KeyStore,
        sealer: Sealer,
        memories: MemoryProjection,
        documents: DocumentProjection,
        runner: ProjectionRunner,
        embedder: Embedder,
        nearest: NearestLive,
        supersede_threshold: float,
    ) -> None:
        self._log = log
        self._keys = keys
        self._sealer = sealer
        self._memories = memories
        self._documents = documents
        self._runner = runner
        self._embedder = embedder
        self._nearest = nearest
        self._threshold = supersede_threshold
        self._fresh = FreshIds(keys, prefix="mem", subject=memory_subject)
        self._locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)
        self._locks_guard = threading.Lock()
        # container -> memory_id -> (token of the write that made it, the in-flight head)
        self._in_flight: defaultdict[str, dict[str, tuple[object, _Head]]] = defaultdict(dict)
        # container -> the appends of its in-flight writes, by token
        self._pending: defaultdict[str, dict[object, Future[Appended]]] = defaultdict(dict)

    # --- writes --------------------------------------------------------------------------

    def write(
        self, container_tag: str, items: Sequence[NewMemory], actor: Actor
    ) -> list[WriteOutcome]:
        """Write a batch into one container: one embedding pass, one durable append."""
        (result,) = self.write_groups([(container_tag, items)], actor)
        if isinstance(result, BaseException):
            raise result
        return result

    def write_groups(
        self, groups: Sequence[tuple[str, Sequence[NewMemory]]], actor: Actor
    ) -> list[list[WriteOutcome] | Exception]:
        """Write batches into several containers at once: one embedding pass for all of
        them, each decided under its container's lock in turn (never two locks held), their
        appends submitted together (so they share group commits) and one projection sync.

        Each group gets its outcomes or the error that stopped it alone; a group that failed
        did not stop the others (a failed embedding pass, before anything is decided, raises).
        """
        return self.submit_groups(groups, actor).finish()

    def submit_groups(
        self, groups: Sequence[tuple[str, Sequence[NewMemory]]], actor: Actor
    ) -> SubmittedGroups:
        """The first half of ``write_groups``: embed, decide and submit the appends. The
        writes are in flight when this returns: later decisions see their heads, so the next
        batch can be decided while this one is made durable and applied (``finish``)."""
        texts = [item.content for _, items in groups for item in items]
        results: list[list[WriteOutcome] | Exception] = [[] for _ in groups]
        submitted = SubmittedGroups(results, sync_to=self._runner.sync_to, land=self._land)
        if not texts:
            return submitted
        vectors = self._embedder.embed(texts)
        start = 0
        try:
            for n, (container_tag, items) in enumerate(groups):
                chunk = vectors[start : start + len(items)]
                start += len(items)
                if not items:
                    continue
                try:
                    submitted.decided.append(
                        (n, container_tag, *self._submit(container_tag, items, chunk, actor))
                    )
                except Exception as exc:
                    results[n] = exc
        except BaseException:
            submitted.abandon()
            raise
        return submitted

    def _submit(
        self,
        container_tag: str,
        items: Sequence[NewMemory],
        vectors: npt.NDArray[np.float32],
        actor: Actor,
    ) -> tuple[object, Future[Appended], list[WriteOutcome]]:
        """Decide one container's writes under its lock and submit their append; the heads
        they make stay *in flight* (seen by the next decisions) until ``_land``."""
        # Ids for the chains this batch may start, their keys already durable (made ahead,
        # outside any lock); those its decisions do not use go back to the pool.
        unused = self._fresh.take(len(items))
        token = object()
        with self._container_lock(container_tag):
            in_flight = self._in_flight[container_tag]
            batch = _Heads([head for _, head in in_flight.values()])
            drafts: list[Draft] = []
            outcomes: list[WriteOutcome] = []
            # Under the lock: the projections must not move between this and the decisions.
            neighbours = self._nearest.nearest_many(container_tag, vectors, 4, self._threshold)
            digests = [content_hash(item.content) for item in items]
            duplicates = self._memories.live_duplicates(container_tag, digests)
            for item, digest, vector, near in zip(items, digests, vectors, neighbours, strict=True):
                event, outcome = self._decide(
                    container_tag, item, digest, duplicates.get(digest), vector, near, batch, unused
                )
                drafts.append(Draft(actor, event))
                outcomes.append(outcome)
            self._fresh.give_back(unused)
            future = self._log.submit(drafts)
            self._pending[container_tag][token] = future
            made = {o.memory_id for o in outcomes if o.status != "deduplicated"}
            for head in batch:
                if head.memory_id in made:
                    in_flight[head.memory_id] = (token, head)
        return token, future, outcomes

    def _land(self, container_tag: str, token: object) -> None:
        """The write ``token`` reached the projections (or failed): drop its in-flight heads."""
        with self._container_lock(container_tag):
            self._pending[container_tag].pop(token, None)
            in_flight = self._in_flight[container_tag]
            for memory_id, (owner, _) in list(in_flight.items()):
                if owner is token:
                    del in_flight[memory_id]

    def _decide(
        self,
        container_tag: str,
        item: NewMemory,
        digest: str,
        duplicate: VersionRow | None,
        vector: npt.NDArray[np.float32],
        near: list[tuple[int, float]],
        batch: _Heads,
        fresh_ids: list[str],
    ) -> tuple[AnyEvent, WriteOutcome]:
        """Decide one write (``digest`` is its content hash, ``duplicate`` the live version in
        the projection with that content); a new chain takes its id (and ready key) from
        ``fresh_ids``."""
        head = batch.with_hash(digest)  # the batch's own chains first: they are the newest
        if head is not None:
            return self._dedup(container_tag, head.memory_id, head.version_id, head.version)
        if duplicate is not None and duplicate.memory_id not in batch:
            return self._dedup(
                container_tag, duplicate.memory_id, duplicate.version_id, duplicate.version
            )
        target = self._closest(item, vector, near, batch)
        if target is not None:
            head, similarity = target
            return self._supersede(container_tag, item, vector, head, similarity, batch)
        memory_id = fresh_ids.pop()
        version_id = _new_id("ver")
        subject = memory_subject(memory_id)
        event = MemoryWritten(
            memory_id=memory_id,
            version_id=version_id,
            container_tag=container_tag,
            content=self._sealer.seal_text(subject, item.content),
            embedding=self._sealer.seal(subject, embed_bytes(vector)),
            metadata=self._seal_metadata(subject, item.metadata),
            context=self._seal_context(subject, item.context),
            is_static=item.is_static,
            observed_at=item.observed_at,
        )
        batch.add(_Head(memory_id, version_id, 1, digest, vector, item.content))
        return event, WriteOutcome(
            memory_id=memory_id, version_id=version_id, version=1, status="created"
        )

    def _dedup(
        self, container_tag: str, memory_id: str, version_id: str, version: int
    ) -> tuple[AnyEvent, WriteOutcome]:
        event = MemoryDeduplicated(
            memory_id=memory_id, version_id=version_id, container_tag=container_tag
        )
        return event, WriteOutcome(
            memory_id=memory_id, version_id=version_id, version=version, status="deduplicated"
        )

    def _closest(
        self,
        item: NewMemory,
        vector: npt.NDArray[np.float32],
        near: list[tuple[int, float]],
        batch: _Heads,
    ) -> tuple[_Head, float] | None:
        """The chain head ``item`` is a near duplicate of: the most similar one whose cosine is
        at or above the threshold and which shares at least ``MIN_SHARED_WORDS`` of the words."""
        best: tuple[_Head, float] | None = None
        for row_id, similarity in near:
            if similarity < self._threshold:
                break
            row = self._memories.by_row_ids([row_id]).get(row_id)
            if row is None or row.memory_id in batch or not _live_latest(row):
                continue
            if _shared(item.content, row.content or "") < MIN_SHARED_WORDS:
                continue
            best = (_head_of(row), similarity)
            break
        pending = batch.closest(vector, self._threshold)
        if (
            pending is not None
            and (best is None or pending[1] > best[1])
            and _shared(item.content, pending[0].text) >= MIN_SHARED_WORDS
        ):
            best = pending
        return best

    def _supersede(
        self,
        container_tag: str,
        item: NewMemory,
        vector: npt.NDArray[np.float32],
        head: _Head,
        similarity: float,
        batch: _Heads,
    ) -> tuple[AnyEvent, WriteOutcome]:
        subject = memory_subject(head.memory_id)
        version_id = _new_id("ver")
        event = MemorySuperseded(
            memory_id=head.memory_id,
            version_id=version_id,
            version=head.version + 1,
            supersedes_version_id=head.version_id,
            container_tag=container_tag,
            content=self._sealer.seal_text(subject, item.content),
            similarity=similarity,
            embedding=self._sealer.seal(subject, embed_bytes(vector)),
            metadata=self._seal_metadata(subject, item.metadata),
            context=self._seal_context(subject, item.context),
            is_static=item.is_static,
            observed_at=item.observed_at,
        )
        batch.add(
            _Head(
                head.memory_id,
                version_id,
                head.version + 1,
                content_hash(item.content),
                vector,
                item.content,
            )
        )
        return event, WriteOutcome(
            memory_id=head.memory_id,
            version_id=version_id,
            version=head.version + 1,
            status="superseded",
            similarity=similarity,
        )

    def edit(
        self,
        memory_id: str,
        item: NewMemory,
        actor: Actor,
        *,
        expected_version: int | None = None,
    ) -> WriteOutcome:
        """A new version with new content (PATCH): never a mutation."""
        container_tag = self._existing(memory_id).container_tag
        vector = self._embedder.embed([item.content])[0]
        with self._container_lock(container_tag):
            self._settle(container_tag)
            latest = self._memories.latest(memory_id)
            if latest is None:
                raise NotFound(f"no memory {memory_id!r}")
            if expected_version is not None and latest.version != expected_version:
                raise VersionConflict(
                    f"memory {memory_id!r} is at version {latest.version}, not {expected_version}"
                )
            subject = memory_subject(memory_id)
            version_id = _new_id("ver")
            event = MemoryEdited(
                memory_id=memory_id,
                version_id=version_id,
                version=latest.version + 1,
                supersedes_version_id=latest.version_id,
                container_tag=container_tag,
                content=self._sealer.seal_text(subject, item.content),
                embedding=self._sealer.seal(subject, embed_bytes(vector)),
                metadata=self._seal_metadata(subject, item.metadata),
                context=self._seal_context(subject, item.context),
                is_static=item.is_static,
                observed_at=item.observed_at,
            )
            seq = self._append(actor, event)
        return WriteOutcome(
            memory_id=memory_id,
            version_id=version_id,
            version=latest.version + 1,
            status="superseded",
            seq=seq,
        )

    # --- forget, restore, erase --------------------------------------------------------------

    def forget(self, memory_id: str, reason: str, actor: Actor) -> int:
        chain = self._existing(memory_id)
        sealed = self._sealer.seal_text(memory_subject(memory_id), reason)
        with self._container_lock(chain.container_tag):
            self._settle(chain.container_tag)
            return self._append(actor, ChainForgotten(memory_id=memory_id, reason=sealed))

    def restore(self, memory_id: str, actor: Actor) -> int:
        chain = self._existing(memory_id)
        with self._container_lock(chain.container_tag):
            self._settle(chain.container_tag)
            return self._append(actor, ChainRestored(memory_id=memory_id))

    def erase(self, memory_id: str, actor: Actor) -> int:
        """Hard delete: destroy the chain's key, then record it; projections purge the text."""
        chain = self._existing(memory_id)
        with self._container_lock(chain.container_tag):
            self._settle(chain.container_tag)
            self._keys.destroy(memory_subject(memory_id))
            event = SubjectErased(
                subject=memory_subject(memory_id),
                scope="memory",
                memory_id=memory_id,
                container_tag=chain.container_tag,
            )
            return self._append(actor, event)

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
        pieces = chunk(content)
        if not pieces:
            raise InvalidInput("the document has no text")
        if len(pieces) >= CHUNK_SLOTS:
            raise InvalidInput(f"the document has more than {CHUNK_SLOTS - 1} chunks")
        existing = self._documents.duplicate(container_tag, content)
        vectors = None if existing is not None else self._embedder.embed([p.text for p in pieces])
        with self._container_lock(container_tag):
            existing = self._documents.duplicate(container_tag, content)
            if existing is not None or vectors is None:
                assert existing is not None
                return DocumentOutcome(
                    document_id=existing.document_id,
                    status="deduplicated",
                    chunks=existing.chunk_count,
                    seq=existing.seq,
                )
            document_id = _new_id("doc")
            subject = document_subject(document_id)
            event = DocumentIngested(
                document_id=document_id,
                container_tag=container_tag,
                content=self._sealer.seal_text(subject, content),
                title=None if title is None else self._sealer.seal_text(subject, title),
                metadata=self._seal_metadata(subject, metadata),
                chunk_embeddings=self._sealer.seal(
                    subject, b"".join(embed_bytes(v) for v in vectors)
                ),
                chunker=CHUNKER,
            )
            seq = self._append(actor, event, *([] if also is None else [also(document_id)]))
        return DocumentOutcome(
            document_id=document_id, status="created", chunks=len(pieces), seq=seq
        )

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
        ids = self._fresh.take(count)
        with self._container_lock(container_tag):
            self._settle(container_tag)
            try:
                chains = build(ids)
            except BaseException:
                self._fresh.give_back(ids)
                raise
            submitted: list[Future[Appended] | InvalidInput] = []
            for memory_id, events in zip(ids, chains, strict=True):
                try:
                    submitted.append(self._log.submit([Draft(actor, e) for e in events]))
                except InvalidInput as exc:  # refused before the log took it: the id is unused
                    self._fresh.give_back([memory_id])
                    submitted.append(exc)
            results = [s if isinstance(s, InvalidInput) else s.result() for s in submitted]
            seqs = [r.seqs[-1] for r in results if isinstance(r, Appended) and r.seqs]
            if seqs:
                self._runner.sync_to(max(seqs))
        return results

    def set_profile(
        self, container_tag: str, static: list[str], dynamic: list[str], actor: Actor
    ) -> int:
        """Replace a container's profile; sealed under the container's key."""
        profile = msgspec.json.encode({"static": static, "dynamic": dynamic})
        sealed = self._sealer.seal(container_subject(container_tag), profile)
        with self._container_lock(container_tag):
            return self._append(actor, ProfileUpdated(container_tag=container_tag, profile=sealed))

    def close(self) -> None:
        self._fresh.close()

    # --- helpers -------------------------------------------------------------------------------

    def _existing(self, memory_id: str) -> VersionRow:
        latest = self._memories.latest(memory_id)
        if latest is None:
            raise NotFound(f"no memory {memory_id!r}")
        if latest.erased:
            raise KeyDestroyed(f"memory {memory_id!r} was erased")
        return latest

    def _settle(self, container_tag: str) -> None:
        """With the container's lock held: let the in-flight writes reach the projections.

        Operations that read a chain's latest version and append under the lock (edit,
        forget, restore, erase) must see every write decided before them. The log keeps
        submission order, so applying up to the head covers every in-flight write; their
        heads are then known to the projections and are dropped from the overlay.
        """
        pending = self._pending[container_tag]
        if not pending:
            return
        seqs = [seq for future in list(pending.values()) for seq in _seqs_of(future)]
        if seqs:
            self._runner.sync_to(max(seqs))
        pending.clear()
        self._in_flight[container_tag].clear()

    def _append(self, actor: Actor, event: AnyEvent, *more: AnyEvent) -> int:
        """Append atomically and apply; the seq of the first event."""
        seqs = self._log.append([Draft(actor, e) for e in (event, *more)]).seqs
        self._runner.sync_to(seqs[-1])
        return seqs[0]

    def _seal_metadata(self, subject: str, metadata: dict[str, object] | None) -> Sealed | None:
        if metadata is None:
            return None
        return self._sealer.seal(subject, msgspec.json.encode(metadata))

    def _seal_context(self, subject: str, context: str | None) -> Sealed | None:
        return None if context is None else self._sealer.seal_text(subject, context)

    def _container_lock(self, container_tag: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks[container_tag]


def _seqs_of(future: Future[Appended]) -> list[int]:
    """The seqs an in-flight append got, once durable; none if it failed (its writer reports
    the failure)."""
    try:
        return future.result().seqs
    except Exception:
        return []


def _live_latest(row: VersionRow) -> bool:
    return row.valid_to is None and not row.forgotten and not row.erased


def _head_of(row: VersionRow) -> _Head:
    return _Head(row.memory_id, row.version_id, row.version, "", None)


def _shared(text: str, other: str) -> float:
    """The share of distinct words two texts have in common (Jaccard); 1.0 for two empties."""
    a, b = plain_words(text), plain_words(other)
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"
