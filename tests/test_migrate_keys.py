"""``mnemolog migrate-log`` moves the key store with the log: every key, tombstone, generation
and re-sealed field lands in PostgreSQL, where a node opens every field the data dir's keys
opened and an erased subject stays erased; a second run, or one after a copy cut off between
the keys and the log, completes it; a database holding other keys is refused and left as it
was."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from mnemolog.errors import KeyDestroyed
from mnemolog.eventlog import LmdbEventLog, LmdbKeyStore, Sealed, Sealer
from mnemolog.eventlog.datadir import keys_dir, log_dir
from mnemolog.eventlog.postgres_keys import PostgresKeyStore
from mnemolog.eventlog.postgres_log import PostgresEventLog
from mnemolog.eventlog.sealing import encode_sealed
from mnemolog.migrate_cli import migrate_log_command

from .factories import memory_draft

TEXTS = {
    "memory:m1": "Ana lives in Porto.",
    "memory:m2": "Bo's phone number, erased before the move.",
    "memory:m3": "Kept through a re-keying.",
}


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """An LMDB store with a live subject, an erased one, a re-keyed one (one field moved, one
    dropped) and a renewed container."""
    keys = LmdbKeyStore(keys_dir(tmp_path))
    sealer = Sealer(keys)
    fields = {subject: sealer.seal_text(subject, text) for subject, text in TEXTS.items()}
    dropped = sealer.seal_text("memory:m3", "Dropped by the re-keying.")
    with LmdbEventLog(log_dir(tmp_path)) as log:
        log.append([memory_draft(s.split(":")[1], f) for s, f in fields.items()])
        log.append([memory_draft("m3", dropped)])
    keys.destroy("memory:m2")
    generation = keys.next_generation("memory:m3")
    moved = sealer.seal(generation, TEXTS["memory:m3"].encode())
    kept = fields["memory:m3"]
    keys.rekey("memory:m3", generation, [(kept.subject, kept.nonce, encode_sealed(moved))])
    sealer.seal_text("container:c1", "a query")
    keys.erase([], renewed=["container:c1"])
    keys.close()
    return tmp_path


@pytest.fixture
def postgres_keys(log_url: str) -> Iterator[PostgresKeyStore]:
    store = PostgresKeyStore(log_url)
    yield store
    store.close()


def migrate(url: str, data_dir: Path) -> Result:
    return CliRunner().invoke(migrate_log_command, ["--to", url, "--data-dir", str(data_dir)])


def sealed_fields(data_dir: Path) -> list[Sealed]:
    with LmdbEventLog(log_dir(data_dir), readonly=True) as log:
        return [s.record.event.content for s in log.read()]  # type: ignore[attr-defined]


def test_migrate_log_copies_the_keys_which_open_what_they_opened(
    data_dir: Path, log_url: str
) -> None:
    moved = migrate(log_url, data_dir)
    assert moved.exit_code == 0, moved.output
    # Live keys: m1 and m3#2; tombstones: m2, m3 and container:c1 (renewed as c1#2).
    assert "copied 2 keys, 3 tombstones, 2 generations, 1 re-sealed fields" in moved.output

    lmdb = LmdbKeyStore(keys_dir(data_dir), readonly=True)
    postgres = PostgresKeyStore(log_url)
    try:
        assert postgres.export() == lmdb.export()
        fields = sealed_fields(data_dir)
        opened = [Sealer(lmdb).open_text(f) for f in fields]
        assert opened == [TEXTS["memory:m1"], None, TEXTS["memory:m3"], None]
        assert [Sealer(postgres).open_text(f) for f in fields] == opened
        with pytest.raises(KeyDestroyed):
            postgres.ensure("memory:m2")
        assert postgres.is_destroyed("memory:m2") and not postgres.is_destroyed("memory:m3")
        assert postgres.current("memory:m3") == "memory:m3#2"
        assert postgres.current("container:c1") == "container:c1#2"
    finally:
        postgres.close()
        lmdb.close()

    again = migrate(log_url, data_dir)
    assert again.exit_code == 0, again.output
    assert "already holds these keys" in again.output
    assert "already holds this log" in again.output


def test_a_copy_cut_off_after_the_keys_is_completed_by_a_second_run(
    data_dir: Path, log_url: str, postgres_keys: PostgresKeyStore
) -> None:
    lmdb = LmdbKeyStore(keys_dir(data_dir), readonly=True)
    try:  # what a run cut off before the log's copy leaves: the keys, an empty log
        postgres_keys.import_contents(lmdb.export())
    finally:
        lmdb.close()
    completed = migrate(log_url, data_dir)
    assert completed.exit_code == 0, completed.output
    assert "already holds these keys" in completed.output
    assert "copied 4 records" in completed.output


def test_a_database_holding_other_keys_is_refused_and_left_as_it_was(
    data_dir: Path, log_url: str, postgres_keys: PostgresKeyStore
) -> None:
    postgres_keys.ensure("memory:someone-else")
    held = postgres_keys.export()
    refused = migrate(log_url, data_dir)
    assert refused.exit_code == 2, refused.output
    assert "holds other keys (1 keys" in refused.output
    assert postgres_keys.export() == held
    log = PostgresEventLog(log_url, readonly=True)
    try:
        assert log.head().seq == 0
    finally:
        log.close()
