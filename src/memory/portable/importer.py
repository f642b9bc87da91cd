"""The import of a ``bellamente-export`` document (``POST /import``) into fresh chains and
documents.

Every chain lands under a fresh id with its versions and windows as the file states them, in
one atomic append of its own (``memory.imported`` events; no dedup or supersede decision, as
an import restores history). Embeddings are made here, in batches, never read from the file;
documents go through the normal ingestion path, so they are chunked again.

A chain is skipped, never written twice, when its source id names a chain this store has
(``exists``), one it already imported with the same content (``already_imported``), or one it
erased (``erased``: the key store keeps a tombstone of every erased subject, and an import
must not bring erased text back). A malformed chain fails alone.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Literal

import msgspec
import numpy as np
import numpy.typing as npt

from ...embedding.port import Embedder, embed_bytes
from ...errors import EmbedderError, InvalidInput, KeyDestroyed, PayloadTooLarge
from ...eventlog import Actor, AnyEvent, EventLog, KeyStore, Sealer
from ...eventlog.events import (
    DocumentImported,
    Evidence,
    ImportedChain,
    ImportOrigin,
    MemoryFlagged,
    MemoryImported,
    MemoryLinked,
)
from ...eventlog.subjects import container_subject, document_subject, memory_subject
from ...projections.documents.projection import DocumentProjection
from ...projections.memories.projection import MemoryProjection
from ..documents import Ingest
from ..lifecycle.chains import Chains
from ..poisoning.head import Detector
from .format import (
    BadItem,
    Chain,
    CheckedChain,
    Document,
    Envelope,
    Profile,
    Provenance,
    SplitSource,
    check_chain,
    decode_item,
    instant,
)

IMPORTER = Actor(agent_id="local", protocol="import")
EMBED_BATCH = 256

Status = Literal["imported", "skipped", "failed"]


class ItemResult(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """What became of one chain, document or profile of the file."""

    index: int
    status: Status
    source_id: str | None = None
    id: str | None = None  # the id it has here: new, or the one it was skipped for
    versions: int | None = None
    reason: str | None = None  # a stable code: exists, already_imported, erased, invalid...
    message: str | None = None
    flagged: int = 0  # versions the poisoning detector flagged (kept, as every write is)


class ImportReport(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    imported: int
    skipped: int
    failed: int
    embed_failures: int
    memories: list[ItemResult]
    documents: list[ItemResult]
    profiles: list[ItemResult]


class _Planned(msgspec.Struct):
    index: int
    checked: CheckedChain
    vectors: list[npt.NDArray[np.float32] | None] = []


def _everywhere(container_tag: str) -> bool:
    return True


class Importer:
    """Imports run one at a time: each decides what to skip from what the previous wrote."""

    def __init__(
        self,
        *,
        ingest: Ingest,
        chains: Chains,
        memories: MemoryProjection,
        documents: DocumentProjection,
        embedder: Embedder,
        log: EventLog,
        keys: KeyStore,
        sealer: Sealer,
        detector: Detector,
    ) -> None:
        self._detector = detector
        self._ingest = ingest
        self._chains = chains
        self._memories = memories
        self._documents = documents
        self._embedder = embedder
        self._log = log
        self._keys = keys
        self._sealer = sealer
        self._lock = threading.Lock()
        self._reaches: Callable[[str], bool] = _everywhere
        self._document_max_bytes: int | None = None

    def run(
        self,
        envelope: Envelope,
        actor: Actor = IMPORTER,
        reaches: Callable[[str], bool] = _everywhere,
        *,
        document_max_bytes: int | None = None,
    ) -> ImportReport:
        """Import ``envelope``. ``reaches``: the containers the caller may reach. A source id
        of a chain or a document in any other container is taken for one this store never
        had, so an import cannot tell another tenant's ids from unknown ones.
        ``document_max_bytes``: a document item larger than this fails alone, as a body that
        large is refused by ``POST /documents``."""
        with self._lock:
            self._reaches = reaches
            self._document_max_bytes = document_max_bytes
            results: dict[int, ItemResult] = {}
            planned = self._plan(envelope.memories, results)
            embed_failures = self._embed(planned)
            self._write_chains(planned, actor, results)
            self._write_links(planned, actor, results)
            memories = [results[i] for i in range(len(envelope.memories))]
            documents = [self._document(i, raw, actor) for i, raw in enumerate(envelope.documents)]
            profiles = [self._profile(i, raw, actor) for i, raw in enumerate(envelope.profiles)]
        every = memories + documents + profiles
        return ImportReport(
            imported=sum(r.status == "imported" for r in every),
            skipped=sum(r.status == "skipped" for r in every),
            failed=sum(r.status == "failed" for r in every),
            embed_failures=embed_failures,
            memories=memories,
            documents=documents,
            profiles=profiles,
        )

    # --- memories --------------------------------------------------------------------------

    def _plan(self, raws: Sequence[msgspec.Raw], results: dict[int, ItemResult]) -> list[_Planned]:
        planned: list[_Planned] = []
        seen: set[str] = set()
        for index, raw in enumerate(raws):
            try:
                chain = decode_item(raw, Chain)
                checked = check_chain(chain)
            except BadItem as exc:
                results[index] = ItemResult(
                    index=index, status="failed", reason="invalid", message=str(exc)
                )
                continue
            if chain.id in seen:
                results[index] = ItemResult(
                    index=index,
                    status="failed",
                    source_id=chain.id,
                    reason="duplicate",
                    message="an earlier chain of the file has the same id",
                )
                continue
            seen.add(chain.id)
            skipped = self._skip_chain(index, checked)
            if skipped is not None:
                results[index] = skipped
                continue
            planned.append(_Planned(index, checked))
        return planned

    def _skip_chain(self, index: int, checked: CheckedChain) -> ItemResult | None:
        """Why this chain must not be written (again), if it must not."""
        source = checked.chain.id

        def skip(reason: str, at: str | None, status: Status = "skipped") -> ItemResult:
            return ItemResult(index=index, status=status, source_id=source, id=at, reason=reason)

        native = self._memories.chain(source)
        if native is not None and not self._reaches(native.container_tag):
            native = None  # another tenant's: as unknown (its tombstone too, if erased)
        elif self._keys.is_destroyed(memory_subject(source)):
            return skip("erased", source)
        if native is not None:
            return skip("erased" if native.erased else "exists", source)
        for earlier in dict.fromkeys(r.id for r in self._memories.imported_from("memory", source)):
            chain = self._memories.chain(earlier)
            if chain is not None and not self._reaches(chain.container_tag):
                continue
            if chain is None or chain.erased:
                return skip("erased", earlier)
            if self._digest_of(earlier) == checked.digest:
                return skip("already_imported", earlier)
            result = skip("conflict", earlier, "failed")
            return msgspec.structs.replace(
                result,
                message=f"chain {source!r} was imported before, as {earlier!r}, with other content",
            )
        return None

    def _digest_of(self, memory_id: str) -> str | None:
        """The digest an imported chain's first event sealed (it is gone once erased)."""
        first = _first_row(self._memories, memory_id)
        if first is None:
            return None
        for stored in self._log.read(first, limit=1):
            event = stored.record.event
            if isinstance(event, MemoryImported) and event.chain is not None:
                return self._sealer.open_text(event.chain.digest)
        return None

    def _embed(self, planned: list[_Planned]) -> int:
        """Embed every version's text, in batches; a text that cannot be embedded is imported
        without a vector (found by full text only) and counted."""
        texts = sorted({v.content for p in planned for v in p.checked.chain.versions})
        vectors: dict[str, npt.NDArray[np.float32] | None] = {}
        for start in range(0, len(texts), EMBED_BATCH):
            batch = texts[start : start + EMBED_BATCH]
            try:
                vectors.update(zip(batch, self._embedder.embed(batch), strict=True))
            except (EmbedderError, InvalidInput):
                for text in batch:  # find the texts that fail, keep the others
                    try:
                        vectors[text] = self._embedder.embed([text])[0]
                    except (EmbedderError, InvalidInput):
                        vectors[text] = None
        failures = 0
        for plan in planned:
            plan.vectors = [vectors[v.content] for v in plan.checked.chain.versions]
            failures += sum(v is None for v in plan.vectors)
        return failures

    def _write_chains(
        self, planned: list[_Planned], actor: Actor, results: dict[int, ItemResult]
    ) -> None:
        by_container: dict[str, list[_Planned]] = {}
        for plan in planned:
            by_container.setdefault(plan.checked.chain.container_tag, []).append(plan)
        for container_tag, plans in by_container.items():

            def build(ids: Sequence[str], plans: list[_Planned] = plans) -> list[list[AnyEvent]]:
                built = [self._events(p, i) for p, i in zip(plans, ids, strict=True)]
                linked = self._with_splits(plans, built)
                return [_screened(p, e, self._detector) for p, e in zip(plans, linked, strict=True)]

            outcomes = self._ingest.import_chains(container_tag, len(plans), build, actor)
            for plan, outcome in zip(plans, outcomes, strict=True):
                source = plan.checked.chain.id
                if isinstance(outcome, InvalidInput):
                    results[plan.index] = ItemResult(
                        index=plan.index,
                        status="failed",
                        source_id=source,
                        reason="invalid",
                        message=str(outcome),
                    )
                    continue
                events = [r.record.event for r in outcome.records]
                event = events[0]
                assert isinstance(event, MemoryImported)
                results[plan.index] = ItemResult(
                    index=plan.index,
                    status="imported",
                    source_id=source,
                    id=event.memory_id,
                    versions=sum(isinstance(e, MemoryImported) for e in events),
                    flagged=sum(isinstance(e, MemoryFlagged) for e in events),
                )

    def _write_links(
        self, planned: list[_Planned], actor: Actor, results: dict[int, ItemResult]
    ) -> None:
        """The links of the chains imported now, to chains of the file that are in the store
        (imported now or before, or there already), in the same container."""
        in_store = {
            r.source_id: r.id
            for r in results.values()
            if r.source_id is not None
            and r.id is not None
            and (r.status == "imported" or r.reason in ("already_imported", "exists"))
        }
        by_container: dict[str, list[AnyEvent]] = {}
        for plan in planned:
            chain = plan.checked.chain
            result = results[plan.index]
            if result.status != "imported" or result.id is None:
                continue
            if isinstance(chain.possibly_updates, msgspec.UnsetType):
                continue
            newer = self._memories.latest(result.id)
            for link in chain.possibly_updates:
                target = in_store.get(link.id)
                older = None if target is None else self._memories.latest(target)
                if newer is None or older is None or older.erased:
                    continue
                if older.container_tag != newer.container_tag or older.memory_id == newer.memory_id:
                    continue
                by_container.setdefault(newer.container_tag, []).append(
                    MemoryLinked(
                        memory_id=newer.memory_id,
                        version_id=newer.version_id,
                        target_memory_id=older.memory_id,
                        target_version_id=older.version_id,
                        container_tag=newer.container_tag,
                        similarity=link.similarity,
                        evidence=Evidence(rule="imported", reason=link.reason),
                    )
                )
        for container_tag, events in by_container.items():
            self._ingest.import_links(container_tag, events, actor)

    def _with_splits(
        self, plans: list[_Planned], built: list[list[AnyEvent]]
    ) -> list[list[AnyEvent]]:
        """Each chain the file says was split from a version of another: that version named
        on its first event, when its chain is in the store (written now, earlier in the file,
        or there already under its own id). Otherwise the chain comes in without it."""
        made: dict[tuple[str, str | None], tuple[str, str]] = {}
        for plan, events in zip(plans, built, strict=True):
            for version, event in zip(plan.checked.chain.versions, events, strict=True):
                assert isinstance(event, MemoryImported)
                made[(plan.checked.chain.id, version.id)] = (event.memory_id, event.version_id)
        out = []
        for plan, events in zip(plans, built, strict=True):
            source = plan.checked.chain.split_from
            if not isinstance(source, msgspec.UnsetType):
                found = made.get((source.id, source.version_id)) or self._native(source)
                if found is not None:
                    first = msgspec.structs.replace(
                        events[0], split_from_memory_id=found[0], split_from_version_id=found[1]
                    )
                    events = [first, *events[1:]]
            out.append(events)
        return out

    def _native(self, source: SplitSource) -> tuple[str, str] | None:
        """The version a split chain came from, if this store holds it under the same ids."""
        chain = self._memories.chain(source.id)
        if chain is None or chain.erased:
            return None
        if not any(v.version_id == source.version_id for v in chain.versions):
            return None
        return source.id, source.version_id

    def _events(self, plan: _Planned, memory_id: str) -> list[AnyEvent]:
        checked = plan.checked
        chain = checked.chain
        subject = memory_subject(memory_id)
        events: list[AnyEvent] = []
        for version, window, vector in zip(
            chain.versions, checked.windows, plan.vectors, strict=True
        ):
            first = version.version == 1
            events.append(
                MemoryImported(
                    memory_id=memory_id,
                    version_id=f"ver_{uuid.uuid4().hex}",
                    version=version.version,
                    container_tag=chain.container_tag,
                    content=self._sealer.seal_text(subject, version.content),
                    valid_from=window.valid_from,
                    valid_to=window.valid_to,
                    source_memory_id=chain.id,
                    source_version_id=version.id,
                    embedding=None
                    if vector is None
                    else self._sealer.seal(subject, embed_bytes(vector)),
                    metadata=None
                    if version.metadata is None
                    else self._sealer.seal(subject, msgspec.json.encode(version.metadata)),
                    context=None
                    if isinstance(version.context, msgspec.UnsetType)
                    else self._sealer.seal_text(subject, version.context),
                    is_static=version.is_static,
                    # Recency reads observedAt: default it to when the version was believed.
                    observed_at=version.observed_at or version.valid_from,
                    chain=_chain_facts(self._sealer, subject, checked) if first else None,
                    origin=_origin(version.provenance),
                )
            )
        return events

    # --- documents and profiles --------------------------------------------------------------

    def _document(self, index: int, raw: msgspec.Raw, actor: Actor) -> ItemResult:
        try:
            document = decode_item(raw, Document)
            origin = _origin(document.provenance)
        except BadItem as exc:
            return ItemResult(index=index, status="failed", reason="invalid", message=str(exc))
        source = document.id
        limit = self._document_max_bytes
        if limit is not None and len(raw) > limit:
            # Ingesting is chunking and embedding: an unbounded text costs unbounded CPU.
            refused = PayloadTooLarge(
                f"the document is {len(raw)} bytes, over the {limit} bytes POST /documents"
                " takes (max_body_bytes)"
            )
            return ItemResult(
                index=index,
                status="failed",
                source_id=source,
                reason=refused.code,
                message=str(refused),
            )

        def result(status: Status, reason: str | None, at: str | None) -> ItemResult:
            return ItemResult(index=index, status=status, source_id=source, id=at, reason=reason)

        native = self._documents.get(source)
        if native is not None and not self._reaches(native.container_tag):
            native = None  # another tenant's: as unknown
        elif self._keys.is_destroyed(document_subject(source)):
            return result("skipped", "erased", source)
        if native is not None:
            return result("skipped", "erased" if native.erased else "exists", source)
        for earlier in self._memories.imported_from("document", source):
            row = self._documents.get(earlier.id)
            if row is not None and not self._reaches(row.container_tag):
                continue
            if row is None or row.erased:
                return result("skipped", "erased", earlier.id)
        try:
            outcome = self._ingest.ingest_document(
                document.container_tag,
                document.content,
                actor,
                title=document.title,
                metadata=dict(document.metadata) if document.metadata is not None else None,
                also=lambda document_id: DocumentImported(
                    document_id=document_id, source_document_id=source, origin=origin
                ),
            )
        except (InvalidInput, KeyDestroyed) as exc:
            return ItemResult(
                index=index, status="failed", source_id=source, reason=exc.code, message=str(exc)
            )
        if outcome.status == "deduplicated":
            return result("skipped", "already_imported", outcome.document_id)
        return result("imported", None, outcome.document_id)

    def _profile(self, index: int, raw: msgspec.Raw, actor: Actor) -> ItemResult:
        try:
            profile = decode_item(raw, Profile)
        except BadItem as exc:
            return ItemResult(index=index, status="failed", reason="invalid", message=str(exc))
        tag = profile.container_tag

        def result(status: Status, reason: str | None = None) -> ItemResult:
            return ItemResult(index=index, status=status, source_id=tag, id=tag, reason=reason)

        if self._keys.is_destroyed(container_subject(tag)):
            return result("skipped", "erased")
        current = self._memories.profile(tag)
        if current is not None:
            same = current[0] == {"static": profile.static, "dynamic": profile.dynamic}
            # The profile set here wins: it may be newer than the file's.
            return result("skipped", "already_imported" if same else "exists")
        self._chains.set_profile(tag, profile.static, profile.dynamic, actor)
        return result("imported")


def _screened(plan: _Planned, events: list[AnyEvent], detector: Detector) -> list[AnyEvent]:
    """An imported chain's events with the poisoning detector's verdict after each version it
    flags, as a write records it: the text is kept, recall shows the flag, trust counts it."""
    out: list[AnyEvent] = []
    versions = plan.checked.chain.versions
    for version, event, vector in zip(versions, events, plan.vectors, strict=True):
        assert isinstance(event, MemoryImported)
        out.append(event)
        verdict = detector.verdict(version.content, vector)
        if verdict.flagged:
            out.append(verdict.recorded(event.memory_id, event.version_id, event.container_tag))
    return out


def _first_row(memories: MemoryProjection, memory_id: str) -> int | None:
    rows = memories.imports_of("memory", memory_id)
    return rows[0].row_id if rows else None


def _chain_facts(sealer: Sealer, subject: str, checked: CheckedChain) -> ImportedChain:
    chain = checked.chain
    reason = chain.forgotten_reason
    return ImportedChain(
        digest=sealer.seal_text(subject, checked.digest),
        created_at=checked.created_at,
        forgotten=chain.forgotten,
        forgotten_at=checked.forgotten_at,
        forgotten_reason=None if reason is None else sealer.seal_text(subject, reason),
    )


def _origin(provenance: Provenance | None) -> ImportOrigin | None:
    if provenance is None:
        return None
    created = provenance.created_at
    return ImportOrigin(
        agent_id=provenance.agent_id,
        protocol=provenance.protocol,
        kind=provenance.kind,
        created_at=None if created is None else instant(created, "provenance.createdAt"),
    )
