from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemolog.eventlog import EventLog, InMemoryEventLog, LmdbEventLog


@pytest.fixture(params=["memory", "lmdb"])
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EventLog]:
    """Each implementation of the ``EventLog`` port, for the contract tests."""
    opened: EventLog = (
        InMemoryEventLog() if request.param == "memory" else LmdbEventLog(tmp_path / "log")
    )
    yield opened
    opened.close()


@pytest.fixture
def lmdb_log(tmp_path: Path) -> Iterator[LmdbEventLog]:
    opened = LmdbEventLog(tmp_path / "log")
    yield opened
    opened.close()
