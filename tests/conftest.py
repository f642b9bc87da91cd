from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from .postgres import Server, started_server, throwaway_server


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules with slow tests first, each module's tests kept in order: on several workers
    (``make test``) the long modules start at once and the short ones fill in around them,
    rather than one long module running alone at the end."""
    slow = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in slow)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Server]:
    """A real PostgreSQL server, for the session (see ``tests/postgres.py``)."""
    yield from started_server()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: Server) -> str:
    return postgres_server.url


@pytest.fixture
def own_postgres() -> Iterator[Server]:
    """A throwaway PostgreSQL cluster of the test's own, for a test that kills every connection
    or restarts the server: the shared one serves other tests meanwhile (``make test`` runs
    the suite on several workers)."""
    yield from throwaway_server()


@pytest.fixture
def log_url(postgres_url: str) -> Iterator[str]:
    """A database of its own on the test server, for one store's log; dropped afterwards."""
    name = "store_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield postgres_url.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
