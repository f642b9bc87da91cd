from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from mnemolog.errors import LogClosed
from mnemolog.eventlog.groupcommit import GroupCommitter


def test_each_request_gets_its_own_answer_or_error() -> None:
    def commit(batch: Sequence[int]) -> list[int | BaseException]:
        return [ValueError(n) if n < 0 else n * 10 for n in batch]

    writer: GroupCommitter[int, int] = GroupCommitter(commit, name="t")
    try:
        assert writer.submit(4).result(timeout=10) == 40
        with pytest.raises(ValueError):
            writer.submit(-1).result(timeout=10)
        assert writer.submit(5).result(timeout=10) == 50
    finally:
        writer.close()


def test_a_failing_batch_fails_every_request_in_it() -> None:
    release = threading.Event()
    entered = threading.Event()

    def commit(batch: Sequence[int]) -> list[int | BaseException]:
        entered.set()
        release.wait(10)
        if 0 in batch:
            raise OSError("disk on fire")
        return list(batch)

    writer: GroupCommitter[int, int] = GroupCommitter(commit, name="t")
    try:
        blocker = writer.submit(1)  # holds the writer while the next two queue up together
        assert entered.wait(10)
        queued = [writer.submit(0), writer.submit(2)]
        release.set()
        assert blocker.result(timeout=10) == 1
        for future in queued:
            with pytest.raises(OSError, match="disk on fire"):
                future.result(timeout=10)
        assert writer.stats.largest == 2
    finally:
        writer.close()


def test_a_failing_periodic_task_does_not_stop_the_writer(caplog: pytest.LogCaptureFixture) -> None:
    ran = threading.Event()

    def periodic() -> None:
        ran.set()
        raise OSError("reader check failed")

    writer: GroupCommitter[str, str] = GroupCommitter(
        lambda batch: list(batch), name="t", every=0.01, periodic=periodic
    )
    try:
        assert ran.wait(10)
        assert writer.submit("still here").result(timeout=10) == "still here"
    finally:
        writer.close()
    assert "periodic task of t failed" in caplog.text


def test_close_finishes_queued_requests_then_refuses_new_ones() -> None:
    writer: GroupCommitter[int, int] = GroupCommitter(lambda batch: list(batch), name="t")
    futures = [writer.submit(n) for n in range(50)]
    writer.close()
    assert [f.result(timeout=10) for f in futures] == list(range(50))
    with pytest.raises(LogClosed):
        writer.submit(99)
