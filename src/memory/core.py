"""The core services of one data dir: projections, the embedder, the domain's services
(writes, chains, documents, recall) and the one seam that records events (``record``).

Boot order matters: the memories projection catches up first so the pinned embedder is known;
the embedder is checked against the pin (a mismatch refuses to boot) and pinned on first use;
only then are the vector and full-text indexes opened with the pinned dimension and caught up.
"""

from __future__ import annotations

from ..embedding import Embedder, QualityEmbedder, check_pin, open_for_store
from ..embedding.coalescing import CoalescingEmbedder
from ..embedding.rerank import Reranker
from ..errors import EmbedderMismatch
from ..eventlog import Actor, Draft, EventLog, KeyStore, Sealer
from ..eventlog.scratch import clear_stale, scratch_root
from ..eventlog.subjects import memory_subject
from ..projections.following import Follower
from ..projections.memories.projection import MemoryProjection
from ..projections.memories.snapshots import Snapshots
from ..projections.readmodels import ReadModels
from ..projections.runner import Progress, ProjectionRunner
from ..settings import Settings
from .agents import Agents
from .documents import Ingest
from .lifecycle.chains import Chains
from .lifecycle.erasure import Erasure
from .lifecycle.splitting import Splits
from .oversight.quarantine import Quarantine
from .oversight.rollback import Rollbacks
from .oversight.trust import Trust, trust_params
from .poisoning.head import Detector
from .portable.exporter import export
from .portable.format import Export
from .portable.importer import Importer
from .reads import Reads
from .recall.learned import Standing
from .recall.service import Recall
from .recall.training import Trainer, Training
from .recall.turns import Turns
from .recall.usage import Usage
from .record import Recorder
from .timings import NO_TIMINGS, StageTimings
from .writing.arbiter import Arbiter
from .writing.combiner import WriteCombiner
from .writing.decision import Writes
from .writing.fresh_ids import FreshIds
from .writing.gate import Gate
from .writing.keyed import KeyedWrites
from .writing.neighbours import LiveNeighbours
from .writing.sameness import gates_for

SYSTEM = Actor(agent_id="mnemolog", protocol="system")


class Core:
    def __init__(
        self,
        settings: Settings,
        log: EventLog,
        keys: KeyStore,
        sealer: Sealer,
        *,
        reranker: Reranker | None = None,
        arbiter: Arbiter | None = None,
        progress: Progress | None = None,
        timings: StageTimings = NO_TIMINGS,
    ) -> None:
        """``reranker`` and ``arbiter``: the optional ports, owned by the shell that made them
        (``runtime.py``); every service gets what it uses here, at construction. ``progress``
        hears how far opening has folded the log (a restore folds all of it), ``timings`` the
        stage times of every write and search."""
        root = settings.data_dir / "projections"
        self.memories = MemoryProjection(root / "memories.sqlite3", sealer)
        try:
            ProjectionRunner(log, [self.memories]).catch_up()
            if self.memories.reembedding() is not None:
                moving = self.memories.pinned_embedder()
                raise EmbedderMismatch(
                    f"this data dir is being re-embedded to "
                    f"{'another embedder' if moving is None else moving.name} and the "
                    "re-embedding has not finished: run `mnemolog reembed` again with the same "
                    "--embedder to finish it (it resumes where it stopped)"
                )
            opened = open_for_store(
                settings.embedder,
                self.memories.pinned_embedder(),
                settings.model_cache,
                threads=settings.embedder_threads,
            )
            # The transformer is far cheaper per text in a batch: concurrent writers and
            # searches share its runs. The static tier is too fast to gain from it.
            self._coalescing = (
                CoalescingEmbedder(opened) if isinstance(opened, QualityEmbedder) else None
            )
            self.embedder: Embedder = self._coalescing or opened
            pin = check_pin(self.memories.pinned_embedder(), self.embedder.identity)
            if pin is not None:
                log.append([Draft(SYSTEM, pin)])
            models = ReadModels(
                root,
                sealer,
                self.embedder.identity.dimension,
                memories=self.memories,
                trust=trust_params(settings),
                embedder_digest=self.embedder.identity.digest,
            )
        except BaseException:
            self.memories.close()
            raise
        self.vectors = models.vectors
        self.fulltext = models.fulltext
        self.context_fulltext = models.context_fulltext
        self.documents = models.documents
        self.document_vectors = models.document_vectors
        self.document_fulltext = models.document_fulltext
        self.traces = models.traces
        # Last in the runner: a snapshot copies the memories projection once it has applied.
        scratch = scratch_root(settings.data_dir)
        clear_stale(scratch)  # what a replay that died left: memory text, kept nowhere else
        self.snapshots = Snapshots(
            settings.data_dir / "snapshots",
            root / "memories.sqlite3",
            every=settings.snapshot_every,
            scratch=scratch,
        )
        self.runner = ProjectionRunner(log, [*models.in_order(), self.snapshots])
        self.runner.catch_up(progress)
        shared = settings.log_url is not None
        self._recorder = Recorder(log, self.runner, shared=shared, refresh=keys.refresh)
        self._min_seq_wait = settings.min_seq_wait
        # The one seam every shell records through, beside the domain's own events: append
        # atomically, then apply to the projections before answering (``Recorder.record``).
        self.record = self._recorder.record
        self._fresh = FreshIds(keys, prefix="mem", subject=memory_subject)
        gate = Gate(self._recorder)
        # Asked by every service that appends a change, before it does anything.
        self.trust = Trust(models.trust, threshold=settings.trust_threshold)
        # The poisoning rules, and the learned head for this embedder when one ships and it
        # is asked for.
        self.detector = (
            Detector.for_embedder(self.embedder.identity)
            if settings.poisoning_head
            else Detector(None)
        )
        self.writes = Writes(
            recorder=self._recorder,
            gate=gate,
            sealer=sealer,
            fresh=self._fresh,
            memories=self.memories,
            embedder=self.embedder,
            nearest=LiveNeighbours(self.memories, self.vectors, self.fulltext),
            gates=gates_for(self.embedder.identity.name, settings.supersede_threshold),
            detector=self.detector,
            trust=self.trust,
            arbiter=arbiter,
            timings=timings,
        )
        self.splits = Splits(
            recorder=self._recorder,
            gate=gate,
            log=log,
            keys=keys,
            sealer=sealer,
            memories=self.memories,
            trust=self.trust,
        )
        self.chains = Chains(
            recorder=self._recorder,
            gate=gate,
            keys=keys,
            sealer=sealer,
            memories=self.memories,
            embedder=self.embedder,
            splits=self.splits,
            writes=self.writes,
            detector=self.detector,
            trust=self.trust,
        )
        self.ingest = Ingest(
            recorder=self._recorder,
            gate=gate,
            sealer=sealer,
            fresh=self._fresh,
            documents=self.documents,
            embedder=self.embedder,
            detector=self.detector,
            trust=self.trust,
        )
        self.agents = Agents(recorder=self._recorder, projection=models.agents)
        self.erasure = Erasure(
            recorder=self._recorder,
            gate=gate,
            log=log,
            keys=keys,
            sealer=sealer,
            memories=self.memories,
            documents=self.documents,
            traces=self.traces,
            agents=self.agents,
            trust=self.trust,
        )
        self.quarantine = Quarantine(
            recorder=self._recorder,
            oversight=models.oversight,
            memories=self.memories,
            documents=self.documents,
        )
        self.rollbacks = Rollbacks(
            recorder=self._recorder,
            gate=gate,
            log=log,
            sealer=sealer,
            memories=self.memories,
            oversight=models.oversight,
            documents=self.documents,
        )
        # REST writes arriving together for one container share one decision batch.
        self.combiner = WriteCombiner(self.writes)
        # Writes sent with an idempotency key: a retry is answered, never written twice.
        self.keyed = KeyedWrites(
            combiner=self.combiner, memories=self.memories, sealer=sealer, recorder=self._recorder
        )
        self.recall = Recall.over(
            models,
            recorder=self._recorder,
            sealer=sealer,
            embedder=self.embedder,
            hidden=self.quarantine.hidden,
            hidden_chunks=self.quarantine.hidden_chunks,
            reranker=reranker,
            rerank_pool=settings.rerank_pool,
            timings=timings,
        )
        # What the shells read, with the read rules applied once.
        self.reads = Reads(
            memories=self.memories,
            documents=self.documents,
            traces=self.traces,
            recall=self.recall,
            quarantine=self.quarantine,
            trust=self.trust,
        )
        self.usage = Usage(recorder=self._recorder, reads=self.reads, sealer=sealer)
        # The learned ranker: trained from feedback in the background, or when asked.
        self.ranker = models.ranker
        self.ranking = Trainer(
            recorder=self._recorder,
            ranker=models.ranker,
            standing=Standing(models.trust, models.oversight.set_aside),
            train_every=settings.ranker_train_every,
        )
        self._training = Training(self.ranking)
        self._training.start()
        self.turns = Turns(recorder=self._recorder, sealer=sealer)
        self.importer = Importer(
            ingest=self.ingest,
            chains=self.chains,
            memories=self.memories,
            documents=self.documents,
            embedder=self.embedder,
            log=log,
            keys=keys,
            sealer=sealer,
            detector=self.detector,
        )
        # Other nodes' appends to a shared log reach the projections without being asked for.
        self._follower = Follower(log, self.runner) if shared else None

    def export(self, container_tag: str | None = None) -> Export:
        """The ``bellamente-export`` document of one container, or of the whole store."""
        return export(self.memories, self.documents, container_tag=container_tag)

    def see(self, min_seq: int) -> None:
        """Return once the projections have applied the log through ``min_seq`` (a read's
        ``minSeq``), or raise ``ProjectionsLagging`` after ``min_seq_wait`` seconds."""
        self._recorder.see(min_seq, self._min_seq_wait)

    def close(self) -> None:
        self._training.stop()
        if self._follower is not None:
            self._follower.close()
        self._fresh.close()
        self.runner.close()
        if self._coalescing is not None:
            self._coalescing.close()
