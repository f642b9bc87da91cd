"""``mnemolog migrate-log --to postgresql://...``: copy a data dir's LMDB log and key store into
PostgreSQL.

The records are copied as stored (the same bytes, so the same hashes) with the idempotency keys,
each checked and chained as it is read, in one transaction: a failure leaves the log in the
database as it was. The copy is then read back from the database and its head compared with
the LMDB log's. The subject keys (every key, tombstone, generation and re-sealed field) are
copied just before, in a transaction of their own, and compared afterwards by their counts
and a digest over them sorted: keys first, so that a copy cut off between the two never leaves
a log in the database whose keys are missing (its fields would read as erased), and a second
run completes it. The data dir must not be in use (its lock is taken); the target log must be
empty or already hold exactly this log, and the target key store empty or already hold exactly
these keys (then that part is not copied again). The LMDB log and keys are left in place (the
keys are a copy a later erasure does not reach: the output says to remove them); the
projections stay in the data dir and serve on as they are once ``MNEMOLOG_LOG_URL`` names the
database, which then holds the log and the keys of every node.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import NoReturn

import click

from .cli_options import data_dir_option
from .errors import CorruptLog, DataDirLocked, InvalidInput, StorageError
from .eventlog.datadir import DataDirLock, keys_dir, log_dir
from .eventlog.keys_port import KeyStoreContents
from .eventlog.keystore import LmdbKeyStore
from .eventlog.lmdb_log import LmdbEventLog
from .eventlog.port import EMPTY_HEAD, Head
from .eventlog.postgres_keys import PostgresKeyStore
from .eventlog.postgres_log import PostgresEventLog
from .settings_env import settings_from_env

EXIT_FAILED = 1
EXIT_REFUSED = 2
EXIT_LOCKED = 3


@click.command("migrate-log")
@click.option(
    "--to",
    "url",
    required=True,
    help="The PostgreSQL database, as a libpq URL (its password from PGPASSWORD or ~/.pgpass).",
)
@data_dir_option
def migrate_log_command(url: str, data_dir: Path | None) -> None:
    """Copy the data dir's LMDB log and keys into PostgreSQL, checked by the log's head hash
    and a digest of the keys.

    Exits 0 when the database holds the log and keys (copied now, or already), 1 if the copy
    failed or does not match, 2 if the database holds another log or other keys or there is no
    log to copy, 3 if the data dir is in use.
    """
    try:
        settings = settings_from_env(os.environ, data_dir=data_dir, log_url=url)
    except InvalidInput as exc:
        raise click.UsageError(str(exc)) from exc
    path = log_dir(settings.data_dir)
    if not (path / "data.mdb").exists():
        _stop(EXIT_REFUSED, f"no log at {path}")
    lock = DataDirLock(settings.data_dir)
    try:
        lock.acquire()
    except DataDirLocked as exc:
        _stop(EXIT_LOCKED, str(exc))
    try:
        source = LmdbEventLog(path, readonly=True)
        try:
            target = PostgresEventLog(url, sole_writer=True)
        except (StorageError, DataDirLocked) as exc:
            source.close()
            _stop(EXIT_LOCKED if isinstance(exc, DataDirLocked) else EXIT_FAILED, str(exc))
        try:
            _migrate(source, target, url, _lmdb_keys(settings.data_dir))
        finally:
            target.close()
            source.close()
    finally:
        lock.release()


def _lmdb_keys(data_dir: Path) -> KeyStoreContents:
    """What the data dir's key store holds (nothing, if no key was ever made)."""
    path = keys_dir(data_dir)
    if not (path / "data.mdb").exists():
        return KeyStoreContents()
    store = LmdbKeyStore(path, readonly=True)
    try:
        return store.export()
    finally:
        store.close()


def _migrate(
    source: LmdbEventLog, target: PostgresEventLog, url: str, keys: KeyStoreContents
) -> None:
    want = source.head()
    if target.head() != want and target.head().seq != 0:
        _stop(
            EXIT_REFUSED,
            f"the database holds another log ({target.head().seq} records): "
            "migrate into an empty database or schema",
        )
    try:
        target_keys = PostgresKeyStore(url)
    except StorageError as exc:
        _stop(EXIT_FAILED, str(exc))
    try:
        _copy_keys(keys, target_keys)
    finally:
        target_keys.close()
    if target.head() == want:
        click.echo(f"the database already holds this log: {want.seq} records, head {want.digest}")
        return
    started = time.perf_counter()
    try:
        copied = target.import_records(source.read_raw(), source.idempotency_keys())
    except (CorruptLog, StorageError, InvalidInput) as exc:
        _stop(EXIT_FAILED, f"the copy failed, the database is unchanged: {exc}")
    found = EMPTY_HEAD
    try:  # read back from the database, every record checked and chained again
        for record in target.read():
            found = Head(record.seq, record.digest, record.record.ts)
    except (CorruptLog, StorageError) as exc:
        _stop(EXIT_FAILED, f"the copy does not read back: {exc}")
    if copied != want or found != want:
        _stop(EXIT_FAILED, f"the copy ends at seq {found.seq} ({found.digest}), not {want.seq}")
    click.echo(
        f"copied {want.seq} records in {time.perf_counter() - started:.1f} s, head {want.digest};"
        " serve from it with MNEMOLOG_LOG_URL set to the same URL"
    )


def _copy_keys(want: KeyStoreContents, target: PostgresKeyStore) -> None:
    """Copy ``want`` into the empty key store of the database, and check it reads back."""
    try:
        held = target.export()
        if held == want:
            click.echo(f"the database already holds these keys: {want.counts()}")
            return
        if not held.is_empty():
            _stop(
                EXIT_REFUSED,
                f"the database holds other keys ({held.counts()}): "
                "migrate into an empty database or schema",
            )
        target.import_contents(want)
        copied = target.export()
    except (StorageError, InvalidInput) as exc:
        _stop(EXIT_FAILED, f"the copy of the keys failed: {exc}")
    if copied.counts() != want.counts() or copied.digest() != want.digest():
        _stop(EXIT_FAILED, f"the keys copied ({copied.counts()}) do not match ({want.counts()})")
    click.echo(
        f"copied {want.counts()}, digest {want.digest()}; the data dir's keys/ still holds "
        "them: remove it once the move is done, or later erasures will not reach that copy"
    )


def _stop(code: int, message: str) -> NoReturn:
    click.echo(f"mnemolog: {message}", err=True)
    sys.exit(code)
