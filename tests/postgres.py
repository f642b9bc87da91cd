"""A real PostgreSQL for the tests: the one ``.ci/run`` started (``MNEMOLOG_TEST_POSTGRES_URL``),
or a throwaway cluster started here by ``tools/postgres_trial.sh`` and stopped when the tests
end. Each test gets a schema of its own, so tests share the server and never each other's log."""

from __future__ import annotations

import os
import subprocess
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import psycopg
import pytest
from psycopg import sql

TRIAL = Path(__file__).resolve().parent.parent / "tools" / "postgres_trial.sh"


@dataclass(frozen=True)
class Server:
    """A running server: its URL, and the directory of its cluster when it is a throwaway one
    (then a test may restart it)."""

    url: str
    trial: Path | None


def started_server() -> Iterator[Server]:
    """A running server for the whole test session."""
    given = os.environ.get("MNEMOLOG_TEST_POSTGRES_URL")
    if given:
        trial = os.environ.get("MNEMOLOG_POSTGRES_TRIAL")
        yield Server(given, Path(trial) if trial else None)
        return
    yield from throwaway_server()


def throwaway_server() -> Iterator[Server]:
    """A throwaway cluster of its own (a temporary directory, loopback), stopped afterwards."""
    started = subprocess.run([str(TRIAL), "start"], capture_output=True, text=True, check=False)
    if started.returncode != 0:
        pytest.skip(f"no PostgreSQL to test against: {started.stderr.strip()}")
    exported = dict(
        line.removeprefix("export ").split("=", 1) for line in started.stdout.splitlines()
    )
    try:
        yield Server(
            exported["MNEMOLOG_TEST_POSTGRES_URL"], Path(exported["MNEMOLOG_POSTGRES_TRIAL"])
        )
    finally:
        subprocess.run([str(TRIAL), "stop", exported["MNEMOLOG_POSTGRES_TRIAL"]], check=False)


def restart(trial: Path) -> None:
    """Restart a throwaway cluster (fast shutdown: its connections are cut)."""
    subprocess.run([str(TRIAL), "restart", str(trial)], check=True, capture_output=True)


def fresh_schema() -> str:
    return "t" + uuid.uuid4().hex[:16]


def drop_schema(url: str, schema: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def run_all(threads: list[threading.Thread], timeout: float = 600) -> None:
    """Start every thread, then wait for each to end."""
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)


class WriterThreads:
    """Threads writing until the ``with`` block ends, each running ``_run(index)``, which
    checks ``_stop`` between writes; ``retries`` counts the failed attempts they retried."""

    def __init__(self, count: int) -> None:
        self.retries = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(w,)) for w in range(count)]

    def __enter__(self) -> Self:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=180)

    def _run(self, index: int) -> None:
        raise NotImplementedError

    def _retried(self) -> None:
        with self._lock:
            self.retries += 1
