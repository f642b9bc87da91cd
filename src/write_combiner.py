"""Concurrent writes to one container, combined into one lifecycle batch.

Eight clients each writing one memory used to make eight lifecycle calls: eight embedding
calls, eight decision passes under the container lock, eight appends and eight projection
syncs, serialised by the GIL. Requests that arrive while a batch for their container is being
written wait and are then written together: one embedding pass, one decision pass, one
append (so one durable commit) and one sync for all of them. A lone request is written at
once, by its own thread.

The requests of a batch are decided in arrival order, exactly as if written one after the
other. If a batch fails with a client error (4xx), each of its requests is written alone, so
only the request at fault gets the error.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Protocol

from .errors import MnemologError
from .eventlog import Actor
from .lifecycle import NewMemory, WriteOutcome

MAX_ITEMS = 512  # memories in one combined batch


class Writes(Protocol):
    def write(
        self, container_tag: str, items: Sequence[NewMemory], actor: Actor
    ) -> list[WriteOutcome]: ...


class _Request:
    __slots__ = ("done", "items", "lead", "wake")

    def __init__(self, items: Sequence[NewMemory]) -> None:
        self.items = items
        self.done: Future[list[WriteOutcome]] = Future()
        self.wake = threading.Event()
        self.lead = False


class WriteCombiner:
    def __init__(self, lifecycle: Writes, *, max_items: int = MAX_ITEMS) -> None:
        self._lifecycle = lifecycle
        self._max_items = max_items
        self._lock = threading.Lock()
        # (container, actor) -> requests waiting; a key present in ``_writing`` has a leader.
        self._waiting: dict[tuple[str, Actor], list[_Request]] = {}
        self._writing: set[tuple[str, Actor]] = set()

    def write(
        self, container_tag: str, items: Sequence[NewMemory], actor: Actor
    ) -> list[WriteOutcome]:
        """Write ``items`` as ``Lifecycle.write`` does, sharing the batch with concurrent
        writes to the same container by the same actor."""
        key = (container_tag, actor)
        request = _Request(items)
        with self._lock:
            self._waiting.setdefault(key, []).append(request)
            if key not in self._writing:
                self._writing.add(key)
                request.lead = True
        while not request.lead:
            request.wake.wait()
            request.wake.clear()
            if request.done.done():
                return request.done.result()
        self._lead(key, container_tag, actor)
        return request.done.result()

    def _lead(self, key: tuple[str, Actor], container_tag: str, actor: Actor) -> None:
        """Write what waits (this thread's request among it), then hand the lead on."""
        with self._lock:
            batch = self._take(key)
        try:
            self._write(container_tag, actor, batch)
        finally:
            with self._lock:
                waiting = self._waiting.get(key)
                if waiting:
                    waiting[0].lead = True  # the oldest waiter writes the next batch
                    waiting[0].wake.set()
                else:
                    self._waiting.pop(key, None)
                    self._writing.discard(key)
            for request in batch:
                request.wake.set()

    def _take(self, key: tuple[str, Actor]) -> list[_Request]:
        waiting = self._waiting[key]
        batch: list[_Request] = []
        count = 0
        while waiting and (not batch or count + len(waiting[0].items) <= self._max_items):
            request = waiting.pop(0)
            batch.append(request)
            count += len(request.items)
        return batch

    def _write(self, container_tag: str, actor: Actor, batch: list[_Request]) -> None:
        try:
            outcomes = self._lifecycle.write(
                container_tag, [item for r in batch for item in r.items], actor
            )
        except MnemologError as exc:
            if exc.status >= 500 or len(batch) == 1:
                for request in batch:
                    request.done.set_exception(exc)
                return
            for request in batch:  # a client error: find whose, by writing each alone
                self._write(container_tag, actor, [request])
            return
        except BaseException as exc:
            for request in batch:
                request.done.set_exception(exc)
            return
        start = 0
        for request in batch:
            request.done.set_result(outcomes[start : start + len(request.items)])
            start += len(request.items)
