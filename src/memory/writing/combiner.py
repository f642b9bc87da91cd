"""Concurrent writes, combined into one call of the write decision.

Eight clients each writing one memory used to make eight write calls: eight embedding
calls, eight decision passes, eight appends and eight projection syncs, serialised by the
GIL. Requests that arrive while another batch is being decided wait and are then written
together (``Writes.submit_groups``): one embedding pass, the decisions of each container
under its own lock, appends that share group commits, one sync. A lone request is written at
once, by its own thread. A batch hands the lead on once submitted, so the next one is decided
while it is made durable and applied.

Within a container the requests are decided in arrival order, exactly as if written one after
the other. If a container's part fails with a client error (4xx), each of its requests is
written alone, so only the request at fault gets the error; so is each of a container's
requests whose append a shared log refused because another node wrote to the container
first (``Writes.write`` decides it again; a keyed request's caller does). A request sent with an
idempotency key (``keyed.py``) carries it through: its ``write.keyed`` event is appended right
after its own events.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from functools import partial
from typing import Protocol

from ...errors import CALLER_ERRORS, AppendConflict
from ...eventlog import Actor
from .keyed import KeySpan, WriteKey
from .submitted import WriteOutcome
from .versions import NewMemory

MAX_ITEMS = 512  # memories in one combined batch


class Submitted(Protocol):
    def finish(self) -> list[list[WriteOutcome] | Exception]: ...


class BatchWriter(Protocol):
    def write(
        self,
        container_tag: str,
        items: Sequence[NewMemory],
        actor: Actor,
        key: WriteKey | None = None,
    ) -> list[WriteOutcome]: ...

    def submit_groups(
        self,
        groups: Sequence[tuple[str, Sequence[NewMemory]]],
        actor: Actor,
        keys: Sequence[Sequence[KeySpan]] | None = None,
    ) -> Submitted: ...


class _Request:
    __slots__ = ("container_tag", "done", "items", "key", "lead", "wake")

    def __init__(
        self, container_tag: str, items: Sequence[NewMemory], key: WriteKey | None
    ) -> None:
        self.container_tag = container_tag
        self.items = items
        self.key = key
        self.done: Future[list[WriteOutcome]] = Future()
        self.wake = threading.Event()
        self.lead = False


class WriteCombiner:
    def __init__(self, writes: BatchWriter, *, max_items: int = MAX_ITEMS) -> None:
        self._writes = writes
        self._max_items = max_items
        self._lock = threading.Lock()
        # actor -> requests waiting; an actor in ``_writing`` has a leader writing for it.
        self._waiting: dict[Actor, list[_Request]] = {}
        self._writing: set[Actor] = set()

    def write(
        self,
        container_tag: str,
        items: Sequence[NewMemory],
        actor: Actor,
        key: WriteKey | None = None,
    ) -> list[WriteOutcome]:
        """Write ``items`` as ``Writes.write`` does, sharing the call with concurrent
        writes by the same actor (``key``: its idempotency key, recorded with it)."""
        request = _Request(container_tag, items, key)
        with self._lock:
            self._waiting.setdefault(actor, []).append(request)
            if actor not in self._writing:
                self._writing.add(actor)
                request.lead = True
        while not request.lead:
            request.wake.wait()
            request.wake.clear()
            if request.done.done():
                return request.done.result()
        self._lead(actor)
        return request.done.result()

    def _lead(self, key: Actor) -> None:
        """Decide and submit what waits (this thread's request among it), hand the lead on,
        then wait for those writes to be durable and applied.

        The lead passes as soon as the batch is submitted: the next batch is embedded and
        decided (seeing this one's heads in flight) while this one is committed and applied,
        so the stages of consecutive batches overlap instead of running one after the other.
        """
        with self._lock:
            batch = self._take(key)
        try:
            finish = self._submit(key, batch)
        finally:
            with self._lock:
                waiting = self._waiting.get(key)
                if waiting:
                    waiting[0].lead = True  # the oldest waiter writes the next batch
                    waiting[0].wake.set()
                else:
                    self._waiting.pop(key, None)
                    self._writing.discard(key)
        try:
            finish()
        finally:
            for request in batch:
                request.wake.set()

    def _take(self, key: Actor) -> list[_Request]:
        waiting = self._waiting[key]
        batch: list[_Request] = []
        count = 0
        while waiting and (not batch or count + len(waiting[0].items) <= self._max_items):
            request = waiting.pop(0)
            batch.append(request)
            count += len(request.items)
        return batch

    def _submit(self, actor: Actor, batch: list[_Request]) -> Callable[[], None]:
        """Submit ``batch`` as one call; what completes it (answers every request)."""
        by_container: dict[str, list[_Request]] = {}
        for request in batch:
            by_container.setdefault(request.container_tag, []).append(request)
        groups = [
            (tag, [item for r in requests for item in r.items])
            for tag, requests in by_container.items()
        ]
        keys = None
        if any(request.key is not None for request in batch):
            keys = [_spans(requests) for requests in by_container.values()]
        try:
            submitted = self._writes.submit_groups(groups, actor, keys)
        except BaseException as exc:  # the embedding pass failed: nothing was written
            return partial(self._failed, actor, batch, exc)
        return partial(self._answer, actor, list(by_container.values()), submitted)

    def _failed(self, actor: Actor, batch: list[_Request], exc: BaseException) -> None:
        if isinstance(exc, CALLER_ERRORS) and len(batch) > 1:
            for request in batch:
                self._alone(actor, request)
            return
        for request in batch:
            request.done.set_exception(exc)

    def _answer(
        self, actor: Actor, by_container: list[list[_Request]], submitted: Submitted
    ) -> None:
        try:
            results = submitted.finish()
        except BaseException as exc:
            for requests in by_container:
                for request in requests:
                    request.done.set_exception(exc)
            return
        for requests, result in zip(by_container, results, strict=True):
            if isinstance(result, list):
                start = 0
                for request in requests:
                    request.done.set_result(result[start : start + len(request.items)])
                    start += len(request.items)
            elif isinstance(result, CALLER_ERRORS) and len(requests) > 1:
                for request in requests:  # a client error: find whose, by writing each alone
                    self._alone(actor, request)
            elif isinstance(result, AppendConflict):
                # Another node wrote to the container first: each request is decided again,
                # alone; a keyed one by its caller, which first looks its key up again.
                for request in requests:
                    if request.key is None:
                        self._alone(actor, request)
                    else:
                        request.done.set_exception(result)
            else:
                for request in requests:
                    request.done.set_exception(result)

    def _alone(self, actor: Actor, request: _Request) -> None:
        try:
            request.done.set_result(
                self._writes.write(request.container_tag, request.items, actor, request.key)
            )
        except Exception as exc:
            request.done.set_exception(exc)


def _spans(requests: list[_Request]) -> list[KeySpan]:
    """The items of each keyed request among a container's, in order."""
    spans: list[KeySpan] = []
    start = 0
    for request in requests:
        stop = start + len(request.items)
        if request.key is not None:
            spans.append(KeySpan(start, stop, request.key))
        start = stop
    return spans
