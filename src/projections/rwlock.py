"""Readers that share the read models, and the runner that changes them, one at a time.

A search reads several read models one after another (candidates, their rows and links, the
trust they carry, the ranker's records); a batch applied between two of those reads would
leave its trace matching no position of the log. So searches read together, holding the
lock's shared side, and the runner applies a batch holding its own side, when no search
reads. A waiting apply goes before searches that arrive after it, so a steady stream of
searches never holds writes back longer than the searches already under way take.

Both sides are reentrant on their thread: a search reads inside its own hold, and the runner
applies inside a rebuild. A thread that reads may not apply (it would wait for itself): that
is refused at once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ReadWriteLock:
    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer: int | None = None  # the thread applying, if any
        self._writer_depth = 0
        self._waiting_writers = 0
        self._mine = threading.local()  # how deep this thread is in the shared side

    @contextmanager
    def reading(self) -> Iterator[None]:
        """The shared side: nothing is applied until every reader has left."""
        depth: int = getattr(self._mine, "depth", 0)
        me = threading.get_ident()
        if depth == 0 and self._writer != me:
            with self._changed:
                while self._writer is not None or self._waiting_writers:
                    self._changed.wait()
                self._readers += 1
        self._mine.depth = depth + 1
        try:
            yield
        finally:
            self._mine.depth = depth
            if depth == 0 and self._writer != me:
                with self._changed:
                    self._readers -= 1
                    if self._readers == 0:
                        self._changed.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """The side of one: no reader reads, no other thread applies."""
        me = threading.get_ident()
        if getattr(self._mine, "depth", 0):
            raise RuntimeError("a thread reading the read models cannot apply to them")
        with self._changed:
            if self._writer == me:
                self._writer_depth += 1
            else:
                self._waiting_writers += 1
                try:
                    while self._writer is not None or self._readers:
                        self._changed.wait()
                finally:
                    self._waiting_writers -= 1
                self._writer, self._writer_depth = me, 1
        try:
            yield
        finally:
            with self._changed:
                self._writer_depth -= 1
                if self._writer_depth == 0:
                    self._writer = None
                    self._changed.notify_all()
