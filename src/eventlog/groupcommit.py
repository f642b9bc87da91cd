"""Group commit: one writer thread turns many concurrent requests into one transaction.

While the writer syncs batch *k* to disk, new requests queue up and become batch *k + 1*, so
durability costs one sync per batch instead of one per request. Each caller's future resolves
only after the batch holding its request is durable.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Generic, TypeVar

import msgspec

from ..errors import LogClosed

logger = logging.getLogger(__name__)

Req = TypeVar("Req")
Res = TypeVar("Res")


class WriterStats(msgspec.Struct, frozen=True):
    """How the writer has batched so far: requests per batch is the group-commit gain."""

    batches: int = 0
    requests: int = 0
    largest: int = 0


class GroupCommitter(Generic[Req, Res]):
    """A single writer thread draining a queue into batches.

    ``commit_batch`` answers each request with its result or with an exception meant for that
    request alone; if it raises, every request of the batch fails with that exception.
    ``periodic`` runs on the writer thread about every ``every`` seconds, busy or idle.
    """

    def __init__(
        self,
        commit_batch: Callable[[Sequence[Req]], Sequence[Res | BaseException]],
        *,
        name: str,
        max_batch: int = 512,
        every: float | None = None,
        periodic: Callable[[], None] | None = None,
    ) -> None:
        self._commit_batch = commit_batch
        self._max_batch = max_batch
        self._every = every
        self._periodic = periodic
        self._queue: queue.SimpleQueue[tuple[Req, Future[Res]] | None] = queue.SimpleQueue()
        self._closed = False
        self._lock = threading.Lock()
        self._stats = WriterStats()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, request: Req) -> Future[Res]:
        future: Future[Res] = Future()
        with self._lock:
            if self._closed:
                raise LogClosed("the writer is closed")
            self._queue.put((request, future))
        return future

    @property
    def stats(self) -> WriterStats:
        return self._stats

    def close(self) -> None:
        """Finish the queued requests, then stop the writer thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        stopping = False
        last_periodic = time.monotonic()
        while not stopping:
            if self._periodic is not None and self._every is not None:
                now = time.monotonic()
                if now - last_periodic >= self._every:
                    last_periodic = now
                    try:
                        self._periodic()
                    except Exception:  # housekeeping must never kill the writer
                        logger.exception("periodic task of %s failed", self._thread.name)
            try:
                first = self._queue.get(timeout=self._every)
            except queue.Empty:
                continue
            if first is None:
                break
            batch = [first]
            while len(batch) < self._max_batch:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stopping = True
                    break
                batch.append(item)
            self._commit(batch)

    def _commit(self, batch: list[tuple[Req, Future[Res]]]) -> None:
        live = [(req, fut) for req, fut in batch if fut.set_running_or_notify_cancel()]
        if not live:
            return
        s = self._stats
        self._stats = WriterStats(s.batches + 1, s.requests + len(live), max(s.largest, len(live)))
        try:
            results = self._commit_batch([req for req, _ in live])
        except BaseException as exc:
            for _, fut in live:
                fut.set_exception(exc)
            return
        for (_, fut), result in zip(live, results, strict=True):
            if isinstance(result, BaseException):
                fut.set_exception(result)
            else:
                fut.set_result(result)
