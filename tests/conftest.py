from __future__ import annotations

from collections.abc import Iterator

import pytest

from .postgres import started_server


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server, for the session (see ``tests/postgres.py``)."""
    yield from started_server()
