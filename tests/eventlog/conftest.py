from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemolog.eventlog import EventLog, InMemoryEventLog, LmdbEventLog
from mnemolog.eventlog.postgres_log import PostgresEventLog

from ..postgres import Server, drop_schema, fresh_schema

LOG_KINDS = ["memory", "lmdb", "postgres"]


@pytest.fixture(params=LOG_KINDS)
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EventLog]:
    """Each implementation of the ``EventLog`` port, for the contract tests."""
    yield from opened_log(request, request.param, tmp_path)


def opened_log(request: pytest.FixtureRequest, kind: str, tmp_path: Path) -> Iterator[EventLog]:
    """A new, empty log of ``kind``, closed (and a PostgreSQL one's schema dropped) after."""
    if kind == "memory":
        opened: EventLog = InMemoryEventLog()
    elif kind == "lmdb":
        opened = LmdbEventLog(tmp_path / "log")
    else:
        url: str = request.getfixturevalue("postgres_url")
        schema = fresh_schema()
        opened = PostgresEventLog(url, schema=schema, poll_interval=0.1)
    try:
        yield opened
    finally:
        opened.close()
        if kind == "postgres":
            drop_schema(url, schema)


@pytest.fixture
def lmdb_log(tmp_path: Path) -> Iterator[LmdbEventLog]:
    opened = LmdbEventLog(tmp_path / "log")
    yield opened
    opened.close()


@pytest.fixture
def pg_schema(postgres_server: Server) -> Iterator[str]:
    """A schema of the test's own on the test server, dropped afterwards."""
    name = fresh_schema()
    yield name
    drop_schema(postgres_server.url, name)


@pytest.fixture
def two_nodes(
    postgres_server: Server, pg_schema: str
) -> Iterator[tuple[PostgresEventLog, PostgresEventLog]]:
    """Two openings of one PostgreSQL log, as two nodes have it."""
    a = PostgresEventLog(postgres_server.url, schema=pg_schema)
    b = PostgresEventLog(postgres_server.url, schema=pg_schema)
    try:
        yield a, b
    finally:
        a.close()
        b.close()
