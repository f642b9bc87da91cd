"""The event log a data dir's settings name: the embedded LMDB log in the data dir, or the
PostgreSQL log of ``log_url``."""

from __future__ import annotations

from ..settings import Settings
from .committed import GroupCommittedLog
from .datadir import log_dir
from .lmdb_log import LmdbEventLog


def open_log(settings: Settings, *, readonly: bool = False) -> GroupCommittedLog:
    """The store's log, for its one writing process (or, ``readonly``, for reading beside
    it)."""
    if settings.log_url is not None:
        # Imported here: psycopg and libpq take ~0.1 s to load, which an LMDB store never needs.
        from .postgres_log import PostgresEventLog

        return PostgresEventLog(settings.log_url, readonly=readonly, sole_writer=not readonly)
    return LmdbEventLog(
        log_dir(settings.data_dir),
        map_size=settings.log_map_size,
        reader_check_every=settings.reader_check_seconds,
        readonly=readonly,
    )
