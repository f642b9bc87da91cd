"""The event log and key store a data dir's settings name: the embedded LMDB ones in the data
dir, or the PostgreSQL ones of ``log_url``."""

from __future__ import annotations

from ..settings import Settings
from .committed import GroupCommittedLog
from .datadir import keys_dir, log_dir
from .keys_port import KeyStore
from .keystore import LmdbKeyStore
from .lmdb_log import LmdbEventLog


def open_log(settings: Settings, *, readonly: bool = False) -> GroupCommittedLog:
    """The store's log, for a serving node (several may share one on PostgreSQL), or,
    ``readonly``, for reading beside them."""
    if settings.log_url is not None:
        # Imported here: psycopg and libpq take ~0.1 s to load, which an LMDB store never needs.
        from .postgres_log import PostgresEventLog

        return PostgresEventLog(settings.log_url, readonly=readonly)
    return LmdbEventLog(
        log_dir(settings.data_dir),
        map_size=settings.log_map_size,
        reader_check_every=settings.reader_check_seconds,
        readonly=readonly,
    )


def open_keys(settings: Settings, *, readonly: bool = False) -> KeyStore:
    """The store's subject keys: beside the log in PostgreSQL when the log is there (every
    node shares them), else in the data dir; ``readonly`` makes and destroys none."""
    if settings.log_url is not None:
        from .postgres_keys import PostgresKeyStore  # psycopg only when needed, as above

        return PostgresKeyStore(settings.log_url, readonly=readonly)
    return LmdbKeyStore(keys_dir(settings.data_dir), readonly=readonly)
