from __future__ import annotations

from collections.abc import Iterator

import pytest

from .postgres import Server, started_server


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Server]:
    """A real PostgreSQL server, for the session (see ``tests/postgres.py``)."""
    yield from started_server()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: Server) -> str:
    return postgres_server.url
