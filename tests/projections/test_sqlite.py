"""A SQLite projection stores its last seq with the batches that change it, lets it lag by at
most ``LAST_SEQ_LAG_MAX`` records over batches that do not, and loses nothing by the lag."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemolog.eventlog import Draft, LmdbEventLog, StoredRecord
from mnemolog.eventlog.events import AgentSignal, ChainRestored
from mnemolog.projections import sqlite as sqlite_module
from mnemolog.projections.runner import ProjectionRunner
from mnemolog.projections.sqlite import SqliteProjection

from ..factories import ACTOR, signal_draft


class Kept(SqliteProjection):
    """Keeps the labels of the signals whose label starts with "keep"; ignores the rest."""

    name = "kept"
    schema = "CREATE TABLE IF NOT EXISTS kept (seq INTEGER PRIMARY KEY, label TEXT NOT NULL);"

    def _fold(self, stored: StoredRecord) -> bool:
        event = stored.record.event
        if isinstance(event, AgentSignal) and event.label.startswith("keep"):
            self._conn.execute(
                "INSERT INTO kept (seq, label) VALUES (?, ?)", (stored.seq, event.label)
            )
        return False

    def rows(self) -> list[tuple[int, str]]:
        with self._lock:
            return self._conn.execute("SELECT seq, label FROM kept ORDER BY seq").fetchall()


def stored_seq(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = 'last_seq'").fetchone()
    return 0 if row is None else int(row[0])


@pytest.fixture
def log(tmp_path: Path) -> Iterator[LmdbEventLog]:
    opened = LmdbEventLog(tmp_path / "log")
    yield opened
    opened.close()


def append(log: LmdbEventLog, runner: ProjectionRunner, *labels: str) -> int:
    seq = log.append([signal_draft(label) for label in labels]).seqs[-1]
    runner.sync_to(seq)
    return seq


def test_the_last_seq_is_stored_with_changes_and_at_the_latest_every_lag(
    tmp_path: Path, log: LmdbEventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_module, "LAST_SEQ_LAG_MAX", 5)
    path = tmp_path / "kept.sqlite3"
    kept = Kept(path)
    runner = ProjectionRunner(log, [kept])
    first = append(log, runner, "keep a")
    assert kept.last_seq() == stored_seq(path) == first
    quiet = append(log, runner, "skip b", "skip c")
    assert kept.last_seq() == quiet
    assert stored_seq(path) == first  # nothing changed: nothing written
    late = append(log, runner, *[f"skip {n}" for n in range(5)])
    assert stored_seq(path) == late  # more than five records behind: stored anyway
    last = append(log, runner, "skip z")
    kept.close()
    assert stored_seq(path) == last  # a clean close stores where it stands


def test_a_lagging_seq_after_a_crash_refolds_to_the_same_rows(
    tmp_path: Path, log: LmdbEventLog
) -> None:
    path = tmp_path / "kept.sqlite3"
    kept = Kept(path)
    runner = ProjectionRunner(log, [kept])
    append(log, runner, "keep a", "skip b")
    append(log, runner, "skip c", "skip d")
    head = append(log, runner, "skip e")
    before = kept.rows()
    assert stored_seq(path) < head  # a crash now leaves the stored seq behind
    reopened = Kept(path)  # the first connection is abandoned, as a crash would leave it
    try:
        assert reopened.last_seq() < head
        assert ProjectionRunner(log, [reopened]).catch_up() == head
        assert reopened.rows() == before == [(1, "keep a")]
    finally:
        reopened.close()
        kept.close()


class KeptV2(Kept):
    """``Kept`` with a changed schema: an extra column."""

    schema = (
        "CREATE TABLE IF NOT EXISTS kept (seq INTEGER PRIMARY KEY, label TEXT NOT NULL, note TEXT);"
    )
    schema_version = 2


def test_a_file_of_another_schema_version_is_refolded_from_the_log(
    tmp_path: Path, log: LmdbEventLog, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "kept.sqlite3"
    old = Kept(path)
    runner = ProjectionRunner(log, [old])
    append(log, runner, "keep-1", "drop", "keep-2")
    runner.close()
    with sqlite3.connect(path) as conn:  # a file made before versions were recorded
        conn.execute("DELETE FROM meta WHERE key = 'schema_version'")

    again = Kept(path)  # the same version: kept as it is
    assert again.last_seq() == log.head().seq and again.rows() == [(1, "keep-1"), (3, "keep-2")]
    again.close()
    assert "schema version" not in caplog.text

    upgraded = KeptV2(path)
    assert upgraded.last_seq() == 0 and upgraded.rows() == []
    assert "another schema version" in caplog.text
    runner = ProjectionRunner(log, [upgraded])
    runner.catch_up()
    assert upgraded.rows() == [(1, "keep-1"), (3, "keep-2")]
    with sqlite3.connect(path) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(kept)")]
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert columns == ["seq", "label", "note"] and version == ("2",)
    runner.close()


class KeptRestores(Kept):
    """Acts on chain restores only: a batch of signals is nothing to it."""

    folds = (ChainRestored,)


def test_a_batch_of_events_a_projection_does_not_fold_opens_no_transaction(
    tmp_path: Path, log: LmdbEventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_module, "LAST_SEQ_LAG_MAX", 5)
    path = tmp_path / "kept.sqlite3"
    projection = KeptRestores(path)
    statements: list[str] = []
    projection._conn.set_trace_callback(statements.append)
    runner = ProjectionRunner(log, [projection])
    append(log, runner, "keep-1", "keep-2")
    assert statements == [] and projection.last_seq() == 2 and stored_seq(path) == 0
    for n in range(3, 9):
        append(log, runner, f"keep-{n}")
    # Only the lagging seq was written, in a statement of its own.
    assert [s for s in statements if "meta" not in s] == []
    assert stored_seq(path) == 6 and projection.last_seq() == 8
    assert projection.rows() == []
    restored = log.append([Draft(ACTOR, ChainRestored(memory_id="m"))]).seqs[-1]
    runner.sync_to(restored)
    assert "BEGIN" in statements and projection.last_seq() == restored
    runner.close()
