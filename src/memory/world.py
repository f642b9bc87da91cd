"""Fresh read models folded from the log up to a seq, and recall over them.

A world lives in a scratch folder inside the data dir (it holds memory text, so it must not
leave the place erasure reaches) and is deleted when closed; folders left by a replay that
died are removed by the next one. Recall in a world records nothing: its would-be event is
kept by a ``RecordingSink`` for comparison.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path

from ..embedding.port import Embedder
from ..embedding.rerank import Reranker
from ..errors import LogClosed
from ..eventlog import Appended, Draft, EventLog, Head, Hold, Sealed, Sealer, StoredRecord
from ..eventlog.conditions import Condition
from ..eventlog.port import UNSHARED
from ..eventlog.scratch import new_scratch
from ..projections.fulltext.index import FullTextIndex
from ..projections.memories.projection import MemoryProjection
from ..projections.memories.snapshots import restore, snapshot_files
from ..projections.readmodels import ReadModels
from ..projections.runner import ProjectionRunner
from ..projections.trust.rows import TrustParams
from .oversight.quarantine import hidden_chunks, hidden_rows
from .recall.service import Recall
from .record import Recorder


class RecordingSink:
    """An ``EventLog`` for replays: reads from the real log, keeps what would be appended."""

    def __init__(self, log: EventLog) -> None:
        self._log = log
        self.drafts: list[Draft] = []

    def submit(
        self,
        drafts: Sequence[Draft],
        *,
        idempotency_key: str | None = None,
        fingerprint: bytes | None = None,
        condition: Condition | None = None,
    ) -> Future[Appended]:
        self.drafts.extend(drafts)
        future: Future[Appended] = Future()
        future.set_exception(LogClosed("a replay appends nothing"))
        return future

    def append(
        self,
        drafts: Sequence[Draft],
        *,
        idempotency_key: str | None = None,
        fingerprint: bytes | None = None,
        condition: Condition | None = None,
    ) -> Appended:
        raise LogClosed("a replay appends nothing")

    async def append_async(
        self,
        drafts: Sequence[Draft],
        *,
        idempotency_key: str | None = None,
        fingerprint: bytes | None = None,
        condition: Condition | None = None,
    ) -> Appended:
        raise LogClosed("a replay appends nothing")

    def read(self, from_seq: int = 1, limit: int | None = None) -> Iterator[StoredRecord]:
        return self._log.read(from_seq, limit)

    def head(self) -> Head:
        return self._log.head()

    def current_head(self) -> Head:
        return self._log.current_head()

    def hold(self, key: str, *, within: bool = False) -> Hold:
        return UNSHARED  # a replay decides alone: it appends nothing

    def wait_for(self, after_seq: int, timeout: float | None = None) -> int:
        return self._log.wait_for(after_seq, timeout)

    async def wait_for_async(self, after_seq: int, timeout: float | None = None) -> int:
        return await self._log.wait_for_async(after_seq, timeout)

    def close(self) -> None:
        """The real log is not the sink's to close."""


class OpenOnly(Sealer):
    """Opens sealed fields like the log's sealer; sealing (what recall does to the query of
    the event it would append) gives an empty field, so a replay never makes a key."""

    def seal(self, subject: str, plaintext: bytes) -> Sealed:
        return Sealed(subject=subject, nonce=b"", ct=b"")


class World:
    """Every read model, folded up to ``seq`` (advance it with ``advance``)."""

    def __init__(
        self,
        log: EventLog,
        sealer: Sealer,
        embedder: Embedder,
        scratch: Path,
        *,
        trust: TrustParams | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        """``reranker``: the cross-encoder that reranks reranked recalls again (without it
        they are unverifiable)."""
        self.folder = new_scratch(scratch)
        self.sealer = sealer
        self.embedder = embedder
        self.models = ReadModels(
            self.folder,
            sealer,
            embedder.identity.dimension,
            background_commits=False,
            trust=trust,
            embedder_digest=embedder.identity.digest,
        )
        self.runner = ProjectionRunner(log, self.models.in_order())
        self.sink = RecordingSink(log)
        m = self.models
        self.recall = Recall.over(
            m,
            recorder=Recorder(self.sink, self.runner),
            sealer=OpenOnly(sealer.keys),
            embedder=embedder,
            hidden=hidden_rows(m.oversight, m.memories),
            hidden_chunks=hidden_chunks(m.oversight, m.documents),
            reranker=reranker,
        )

    def advance(self, seq: int) -> None:
        self.runner.sync_to(seq)

    def position(self) -> int:
        return self.runner.position()

    def committed(self, family: str) -> int:
        """The seq the full-text index of ``family`` (memories, contexts, documents) has on
        disk."""
        return self._fulltext(family).visible_seq

    def commit_through(self, family: str, seq: int) -> None:
        self._fulltext(family).commit_through(seq)

    def _fulltext(self, family: str) -> FullTextIndex:
        projections = {
            "memories": self.models.fulltext,
            "contexts": self.models.context_fulltext,
            "documents": self.models.document_fulltext,
        }
        return projections[family].index

    def close(self) -> None:
        try:
            self.runner.close()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


class MemoriesAt:
    """The memories projection alone at ``seq``: from the nearest snapshot, or from the start."""

    def __init__(
        self,
        log: EventLog,
        sealer: Sealer,
        scratch: Path,
        seq: int,
        snapshot: Path | None = None,
    ) -> None:
        self.folder = new_scratch(scratch)
        self.path = self.folder / "memories.sqlite3"
        try:
            if snapshot is not None:
                restore(snapshot, self.path)
            self.memories = MemoryProjection(self.path, sealer)
        except BaseException:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        self.started_from = self.memories.last_seq()
        ProjectionRunner(log, [self.memories]).sync_to(seq)

    @classmethod
    def nearest(
        cls, log: EventLog, sealer: Sealer, scratch: Path, seq: int, snapshots: Path
    ) -> MemoriesAt:
        """At ``seq``, folded from the newest snapshot in ``snapshots`` at or before it.

        A running server prunes old snapshots as it takes new ones, so a snapshot listed here
        may be gone when it is copied: the next older one is tried, then the first record."""
        before = [path for taken, path in snapshot_files(snapshots) if taken <= seq]
        for path in reversed(before):
            try:
                return cls(log, sealer, scratch, seq, path)
            except FileNotFoundError:
                continue
        return cls(log, sealer, scratch, seq)

    def close(self) -> None:
        try:
            self.memories.close()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
