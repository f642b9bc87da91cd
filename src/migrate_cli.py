"""``mnemolog migrate-log --to postgresql://...``: copy a data dir's LMDB log into PostgreSQL.

The records are copied as stored (the same bytes, so the same hashes), each checked and chained
as it is read, with the idempotency keys, in one transaction: a failure leaves the database as
it was. The copy is then read back from the database and its head compared with the LMDB
log's. The data dir must not be in use (its lock is taken), and the target log must be empty,
or already hold exactly this log (then nothing is done). The LMDB log is left in place; the
keys and the projections stay in the data dir, and serve on as they are once
``MNEMOLOG_LOG_URL`` names the database.
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
from .eventlog.datadir import DataDirLock, log_dir
from .eventlog.lmdb_log import LmdbEventLog
from .eventlog.port import EMPTY_HEAD, Head
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
    """Copy the data dir's LMDB log into PostgreSQL, checked by its head hash.

    Exits 0 when the database holds the log (copied now, or already), 1 if the copy failed or
    does not match, 2 if the database holds another log or there is no log to copy, 3 if the
    data dir is in use.
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
            _migrate(source, target)
        finally:
            target.close()
            source.close()
    finally:
        lock.release()


def _migrate(source: LmdbEventLog, target: PostgresEventLog) -> None:
    want = source.head()
    if target.head() == want:
        click.echo(f"the database already holds this log: {want.seq} records, head {want.digest}")
        return
    if target.head().seq != 0:
        _stop(
            EXIT_REFUSED,
            f"the database holds another log ({target.head().seq} records): "
            "migrate into an empty database or schema",
        )
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


def _stop(code: int, message: str) -> NoReturn:
    click.echo(f"mnemolog: {message}", err=True)
    sys.exit(code)
