"""An in-process subscription: readers sleep until the log's head moves past them."""

from __future__ import annotations

import asyncio
import threading
import time


class HeadNotifier:
    """Wakes threads and asyncio tasks waiting for new events."""

    def __init__(self, head_seq: int = 0) -> None:
        self._cond = threading.Condition()
        self._seq = head_seq
        self._closed = False
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    @property
    def seq(self) -> int:
        return self._seq

    def publish(self, seq: int) -> None:
        """Announce a new head (called by the writer after a durable commit)."""
        with self._cond:
            if seq <= self._seq and not self._closed:
                return
            self._seq = max(seq, self._seq)
            self._cond.notify_all()
            waiters, self._waiters = self._waiters, []
        for loop, fut in waiters:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_resolve, fut)

    def close(self) -> None:
        with self._cond:
            self._closed = True
        self.publish(self._seq)

    def wait_for(self, after_seq: int, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._seq <= after_seq and not self._closed:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    break
                self._cond.wait(remaining)
            return self._seq

    async def wait_for_async(self, after_seq: int, timeout: float | None = None) -> int:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            with self._cond:
                if self._seq > after_seq or self._closed:
                    return self._seq
                fut: asyncio.Future[None] = loop.create_future()
                waiter = (loop, fut)
                self._waiters.append(waiter)
            remaining = None if deadline is None else deadline - loop.time()
            try:
                if remaining is not None and remaining <= 0:
                    return self._seq
                await asyncio.wait_for(fut, remaining)
            except TimeoutError:
                return self._seq
            finally:
                with self._cond:
                    if waiter in self._waiters:
                        self._waiters.remove(waiter)


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
