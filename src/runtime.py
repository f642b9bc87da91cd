"""The opened stores of one data dir, owned by exactly one process."""

from __future__ import annotations

import threading
from collections.abc import Callable

from threadpoolctl import threadpool_limits

from .audit.signing import store_key
from .embedding import CrossEncoder, reranker_folder
from .eventlog.datadir import DataDirLock
from .eventlog.opening import open_keys, open_log
from .eventlog.sealing import Sealer
from .memory.core import Core
from .proxy.arbiter import UpstreamArbiter
from .settings import Settings
from .web.metrics import Metrics


class Runtime:
    """Takes the data-dir lock first, then opens the log and the key store."""

    def __init__(
        self, settings: Settings, *, progress: Callable[[int, int], None] | None = None
    ) -> None:
        # One BLAS thread for the process: the matrix products here are small, and waking
        # OpenBLAS's pool on a 2-core machine costs more than it gains and starves requests.
        threadpool_limits(limits=1, user_api="blas")
        self.settings = settings
        self._closing = threading.Lock()
        self._closed = False
        self._lock = DataDirLock(settings.data_dir)
        self._lock.acquire()
        try:
            self.log = open_log(settings)
            try:
                self.keys = open_keys(settings)
                self.sealer = Sealer(self.keys)
                # Opened at the first search that asks for it: a server where no one
                # reranks never reads the model.
                self.reranker = CrossEncoder(
                    reranker_folder(settings.model_cache), threads=settings.embedder_threads
                )
                # Unsure pairs of the write decision put to the upstream model, when the user
                # asked for it.
                self.arbiter = (
                    UpstreamArbiter(settings)
                    if settings.arbitration and (settings.upstream_base_url or "").rstrip("/")
                    else None
                )
                # Every write's and search's stage times, and what ``GET /metrics`` shows.
                self.metrics = Metrics()
                try:
                    self.core = Core(
                        settings,
                        self.log,
                        self.keys,
                        self.sealer,
                        reranker=self.reranker,
                        arbiter=self.arbiter,
                        progress=progress,
                        timings=self.metrics,
                    )
                    # The key that signs log exports: made at the first boot, kept for good.
                    store_key(settings.data_dir)
                except BaseException:
                    if self.arbiter is not None:
                        self.arbiter.close()
                    self.keys.close()
                    raise
            except BaseException:
                self.log.close()
                raise
        except BaseException:
            self._lock.release()
            raise

    def close(self) -> None:
        """Save the indexes, close the stores and release the data dir; idempotent."""
        with self._closing:
            if self._closed:
                return
            self._closed = True
            try:
                self.reranker.close()
                if self.arbiter is not None:
                    self.arbiter.close()
                self.core.close()
                self.keys.close()
                self.log.close()
            finally:
                self._lock.release()
