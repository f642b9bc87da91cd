"""Re-embedding: move a data dir to another embedder by replaying its log into new vectors.

Vectors of two embedders cannot be searched together, so a data dir is pinned to one. To move
it, ``mnemolog reembed`` (the server stopped) appends:

1. ``embedder.reembed_started``, naming the new embedder: from here the data dir's vectors are
   its, and the server refuses to start until the move is finished;
2. ``vectors.reembedded`` batches: the new vector of every memory version and of every
   document's chunks stored before, each sealed under the same subject as the text it embeds
   (erasing the text erases its new vector with it); a text already erased gets none;
3. ``embedder.reembed_completed``.

It resumes: run again after a crash or an interrupt, it finds what the batches already
covered and embeds the rest. The projections fold the batches like any other events
(``projections/indexes.py``), so the next start (or a rebuild, or a replay) gives the same
index as a data dir built on the new embedder from its first write.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from ...embedding.identity import EmbedderIdentity
from ...embedding.port import Embedder, embed_rows_bytes
from ...errors import InvalidInput
from ...eventlog import Actor, Draft, EventLog, Sealer
from ...eventlog.events import (
    DocumentIngested,
    EmbedderPinned,
    ReembedCompleted,
    ReembeddedVector,
    ReembedStarted,
    Sealed,
    VectorsReembedded,
    VersionEvent,
)
from ...projections.documents.chunking import chunk

BATCH = 64  # texts a batch event carries: small enough that an interrupt loses little

Progress = Callable[[int, int], None]  # (texts done, texts in all)


@dataclass(frozen=True)
class Item:
    seq: int
    subject: str  # the key the text is sealed under, without its generation
    texts: list[str]  # one for a version, the chunks for a document
    version_id: str | None


@dataclass(frozen=True)
class Report:
    started: bool  # False when an interrupted re-embedding was resumed
    versions: int
    documents: int
    skipped: int  # items already re-embedded by an earlier, interrupted run
    seconds: float


@dataclass
class _State:
    pin: EmbedderIdentity | None = None  # what the data dir's vectors are now
    started_at: int | None = None  # seq of the re-embedding under way to ``pin``, if any
    done: set[int] | None = None


def reembed(
    log: EventLog,
    sealer: Sealer,
    embedder: Embedder,
    actor: Actor,
    progress: Progress | None = None,
) -> Report:
    """Move the data dir to ``embedder``; raises ``InvalidInput`` if it is there already."""
    began = time.perf_counter()
    target = embedder.identity
    state = _scan(log, target)
    if state.pin is None:
        raise InvalidInput("this data dir has no vectors yet: start the server on the new tier")
    if state.pin == target and state.started_at is None:
        raise InvalidInput(f"this data dir is on {target.describe()} already: nothing to do")
    started = state.started_at is None or state.pin != target
    if started:
        log.append(
            [
                Draft(
                    actor,
                    ReembedStarted(
                        name=target.name,
                        dimension=target.dimension,
                        digest=target.digest,
                        previous_name=state.pin.name,
                        previous_digest=state.pin.digest,
                    ),
                )
            ]
        )
        state = _scan(log, target)
    assert state.started_at is not None and state.done is not None
    items = list(_items(log, sealer, state.started_at))
    todo = [item for item in items if item.seq not in state.done]
    total = sum(len(item.texts) for item in todo)
    done_texts = 0
    versions = documents = 0
    for batch in _batches(todo):
        texts = [text for item in batch for text in item.texts]
        vectors = embedder.embed(texts) if texts else np.zeros((0, target.dimension))
        made_versions: list[ReembeddedVector] = []
        made_documents: list[ReembeddedVector] = []
        at = 0
        for item in batch:
            rows = vectors[at : at + len(item.texts)]
            at += len(item.texts)
            raw = embed_rows_bytes(rows)
            made = ReembeddedVector(
                seq=item.seq, embedding=sealer.seal(item.subject, raw), version_id=item.version_id
            )
            (made_versions if item.version_id is not None else made_documents).append(made)
        log.append(
            [
                Draft(
                    actor,
                    VectorsReembedded(
                        digest=target.digest, versions=made_versions, documents=made_documents
                    ),
                )
            ]
        )
        versions += len(made_versions)
        documents += len(made_documents)
        done_texts += len(texts)
        if progress is not None:
            progress(done_texts, total)
    seconds = round(time.perf_counter() - began, 3)
    log.append(
        [
            Draft(
                actor,
                ReembedCompleted(
                    digest=target.digest,
                    versions=sum(1 for i in items if i.version_id is not None),
                    documents=sum(1 for i in items if i.version_id is None),
                    seconds=seconds,
                ),
            )
        ]
    )
    return Report(started, versions, documents, len(items) - len(todo), seconds)


def _scan(log: EventLog, target: EmbedderIdentity) -> _State:
    """The pin in force, and the re-embedding under way with what it covered so far."""
    state = _State()
    for stored in log.read():
        event = stored.record.event
        if isinstance(event, EmbedderPinned) and state.pin is None:
            state.pin = EmbedderIdentity(event.name, event.dimension, event.digest)
        elif isinstance(event, ReembedStarted):
            state.pin = EmbedderIdentity(event.name, event.dimension, event.digest)
            state.started_at, state.done = stored.seq, set()
        elif isinstance(event, VectorsReembedded) and state.done is not None:
            if event.digest == target.digest:
                state.done.update(item.seq for item in (*event.versions, *event.documents))
        elif isinstance(event, ReembedCompleted):
            state.started_at, state.done = None, None
    return state


def _items(log: EventLog, sealer: Sealer, before: int) -> Iterator[Item]:
    """Every version and document stored before seq ``before`` whose text is still readable."""
    for stored in log.read(0):
        if stored.seq >= before:
            return
        event = stored.record.event
        if isinstance(event, VersionEvent):
            text = sealer.open_text(event.content)
            if text is not None:
                yield Item(stored.seq, _subject(event.content), [text], event.version_id)
        elif isinstance(event, DocumentIngested):
            text = sealer.open_text(event.content)
            if text is not None:
                pieces = [piece.text for piece in chunk(text)]
                yield Item(stored.seq, _subject(event.content), pieces, None)


def _subject(sealed: Sealed) -> str:
    """The subject a field is sealed under, without a generation (``memory:m#2``)."""
    return sealed.subject.partition("#")[0]


def _batches(items: list[Item]) -> Iterator[list[Item]]:
    batch: list[Item] = []
    count = 0
    for item in items:
        if batch and count + len(item.texts) > BATCH:
            yield batch
            batch, count = [], 0
        batch.append(item)
        count += len(item.texts)
    if batch:
        yield batch
