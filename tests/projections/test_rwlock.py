"""The lock searches share and the runner takes alone: readers together, a batch only when no
reader reads, a waiting batch before later readers, both sides reentrant."""

from __future__ import annotations

import threading
import time

import pytest

from mnemolog.projections.rwlock import ReadWriteLock


def test_readers_read_together() -> None:
    lock = ReadWriteLock()
    inside = threading.Barrier(3, timeout=5)

    def read() -> None:
        with lock.reading():
            inside.wait()  # all three at once, or the barrier times out

    threads = [threading.Thread(target=read) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not inside.broken


def test_a_batch_waits_for_the_readers_and_goes_before_later_ones() -> None:
    lock = ReadWriteLock()
    order: list[str] = []
    first_in = threading.Event()
    leave = threading.Event()

    def first() -> None:
        with lock.reading():
            first_in.set()
            leave.wait(5)
            order.append("first read")

    def apply() -> None:
        with lock.writing():
            order.append("applied")

    def later() -> None:
        with lock.reading():
            order.append("later read")

    reader = threading.Thread(target=first)
    reader.start()
    assert first_in.wait(5)
    writer = threading.Thread(target=apply)
    writer.start()
    time.sleep(0.05)  # the writer is waiting now
    late = threading.Thread(target=later)
    late.start()
    time.sleep(0.05)
    assert order == []  # neither the batch nor the later reader got past the first reader
    leave.set()
    for thread in (reader, writer, late):
        thread.join(5)
    assert order == ["first read", "applied", "later read"]


def test_both_sides_are_reentrant_and_a_reader_cannot_apply() -> None:
    lock = ReadWriteLock()
    with lock.writing(), lock.writing(), lock.reading():
        pass
    with lock.reading(), lock.reading(), pytest.raises(RuntimeError), lock.writing():
        pass
    with lock.writing():  # nothing was left held
        pass
