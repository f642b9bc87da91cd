"""The PostgreSQL log under faults, with writers appending all along: its connections killed
by the server, then the server restarted. A writer retries a failed append with the same
idempotency key, as a client retries a 503. Afterwards every acknowledged append is in the log
exactly once, nothing else is, the chain holds, and the log takes appends again."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg
import pytest

from mnemolog.errors import StorageFailed
from mnemolog.eventlog.postgres_log import PostgresEventLog

from ..factories import signal_draft
from ..postgres import Server, WriterThreads, drop_schema, fresh_schema, restart

WRITERS = 4


@pytest.fixture
def schema(own_postgres: Server) -> Iterator[str]:
    name = fresh_schema()
    yield name
    drop_schema(own_postgres.url, name)


class Writers(WriterThreads):
    """Threads appending one keyed event at a time until stopped, retrying each failed append
    with its key until it is acknowledged."""

    def __init__(self, log: PostgresEventLog) -> None:
        super().__init__(WRITERS)
        self.log = log
        self.acknowledged: dict[str, list[int]] = {}

    def _run(self, writer: int) -> None:
        n = 0
        while not self._stop.is_set():
            key = f"w{writer}-{n}"
            deadline = time.monotonic() + 60
            while True:
                try:
                    seqs = self.log.append([signal_draft(key)], idempotency_key=key).seqs
                    break
                except StorageFailed:
                    self._retried()
                    assert time.monotonic() < deadline, f"{key} never landed"
                    time.sleep(0.05)
            with self._lock:
                self.acknowledged[key] = seqs
            n += 1


def kill_connections(url: str, schema: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        killed = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE application_name = %s",
            (f"mnemolog:{schema}",),
        ).fetchone()
    return 0 if killed is None else int(killed[0])


def test_killed_connections_and_a_restart_lose_and_duplicate_nothing(
    own_postgres: Server, schema: str
) -> None:
    assert own_postgres.trial is not None
    log = PostgresEventLog(own_postgres.url, schema=schema, poll_interval=0.1)
    try:
        with Writers(log) as writers:
            time.sleep(0.5)
            killed = 0
            for _ in range(3):
                killed += kill_connections(own_postgres.url, schema)
                time.sleep(0.4)
            restart(own_postgres.trial)
            time.sleep(1.0)
        assert killed >= 3  # the writer's, the reader's or the listener's, each time
        assert writers.retries > 0  # the faults reached the writers
        assert len(writers.acknowledged) > 50
        records = list(log.read())  # checks every record and the chain
        labels = [r.record.event.label for r in records]  # type: ignore[union-attr]
        assert sorted(labels) == sorted(writers.acknowledged)  # each once, nothing else
        for record in records:
            assert writers.acknowledged[record.record.event.label] == [record.seq]  # type: ignore[union-attr]
        assert log.head().seq == len(records)
        # The log takes appends again, and another opening of it sees the same head.
        assert log.append([signal_draft("after")]).seqs == [len(records) + 1]
        with PostgresEventLog(own_postgres.url, schema=schema) as again:
            assert again.head() == log.head()
    finally:
        log.close()
