"""SQLite connections for read models: derived data, so speed over durability, and erasable.

A projection can always be rebuilt from the log, so commits skip fsync. Erasure needs more
than DELETE: ``secure_delete`` zeroes freed cells, and a TRUNCATE checkpoint empties the WAL
file, which would otherwise keep old page images holding the erased text.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from ..eventlog import StoredRecord
from ..eventlog.events import Event

log = logging.getLogger(__name__)

CACHE_KIB = 128 * 1024  # page cache per connection, at most
# A batch that changes no row of a projection (a write, for the traces projection) does not
# write its last seq either: that write was a third of the SQLite time of a single-memory
# write. The stored seq may fall this many records behind; a restart then refolds at most
# these (they change nothing again) before the projection is current.
LAST_SEQ_LAG_MAX = 1000


def connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA secure_delete=ON")
    conn.execute("PRAGMA foreign_keys=ON")
    # The default 2 MiB page cache holds a fraction of a 100k-memory projection's indexes,
    # whose keys (random ids) are inserted all over them: a rebuild then spent 38 µs a row in
    # page reads. The cache is allocated only as pages are used.
    conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
    path.chmod(0o600)
    return conn


def scrub(conn: sqlite3.Connection) -> None:
    """Push deleted bytes out of the WAL file after an erase."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


class SqliteProjection:
    """A projection kept in one SQLite file: its schema, its last seq (in the same transaction
    as the rows of each batch that changes any, and at least every ``LAST_SEQ_LAG_MAX``
    records), scrubbing after an erase, and a reset that deletes the files.

    Subclasses set ``name`` and ``schema`` and fold one record at a time in ``_fold``. A file
    made with another ``schema_version`` is deleted when opened and folded again from the log.
    ``folds`` names the event types ``_fold`` acts on (None: any): a batch with none of them
    opens no transaction.
    """

    name = "sqlite"
    schema = ""
    schema_version = 1
    folds: tuple[type[Event], ...] | None = None

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.RLock()
        self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        conn = connect(self._path)
        conn.executescript(_META_SCHEMA)
        if _schema_version(conn) not in (None, self.schema_version):
            log.warning(
                "%s has another schema version: it is rebuilt from the log", self._path.name
            )
            conn.close()
            _delete_files(self._path)
            conn = connect(self._path)
            conn.executescript(_META_SCHEMA)
        conn.executescript(self.schema)
        conn.execute(
            "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(self.schema_version),)
        )
        row = conn.execute("SELECT value FROM meta WHERE key = 'last_seq'").fetchone()
        # Kept in memory as well: the runner and every recall ask for it, and reading it
        # from the table would wait for a batch being applied.
        self._last_seq = 0 if row is None else int(row[0])
        self._stored_seq = self._last_seq  # what the meta table holds
        return conn

    def last_seq(self) -> int:
        return self._last_seq

    def apply(self, records: Sequence[StoredRecord]) -> None:
        erased = False
        seq = records[-1].seq
        folds = self.folds
        if folds is not None and not any(isinstance(r.record.event, folds) for r in records):
            # A write's batch for the traces projection, a search's for the memories one: the
            # transactions that changed nothing cost a single write about a tenth of its time.
            with self._lock:
                if seq - self._stored_seq > LAST_SEQ_LAG_MAX:
                    self._store_seq(seq)  # autocommit: a statement of its own
                self._last_seq = seq
            return
        with self._lock:
            changes = self._conn.total_changes
            self._conn.execute("BEGIN")
            try:
                for stored in records:
                    erased |= self._fold(stored)
                self._end_batch()
                if self._conn.total_changes != changes or seq - self._stored_seq > LAST_SEQ_LAG_MAX:
                    self._store_seq(seq)
                self._conn.execute("COMMIT")
                self._last_seq = seq
            except BaseException:
                self._conn.execute("ROLLBACK")
                self._rolled_back()
                raise
            if erased:
                scrub(self._conn)
            self._committed()

    def _store_seq(self, seq: int) -> None:
        self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('last_seq', ?)", (str(seq),))
        self._stored_seq = seq

    def _fold(self, stored: StoredRecord) -> bool:
        """Apply one record inside the batch's transaction; True when it erased text."""
        return False

    def _end_batch(self) -> None:
        """After the batch's last fold, inside its transaction: write what was held back."""

    def _committed(self) -> None:
        """After a batch commits: bring in-memory state in step."""

    def _rolled_back(self) -> None:
        """After a batch fails: drop in-memory state gathered for it."""

    def reset(self) -> None:
        with self._lock:
            self._conn.close()
            _delete_files(self._path)
            self._conn = self._open()
            self._committed()

    def close(self) -> None:
        with self._lock:
            if self._stored_seq != self._last_seq:
                self._store_seq(self._last_seq)  # autocommit: a statement of its own
            self._conn.close()


_META_SCHEMA = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"


def _schema_version(conn: sqlite3.Connection) -> int | None:
    """The schema version a file was made with: None for a new file, 1 for one made before
    versions were recorded."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is not None:
        return int(row[0])
    tables = conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name != 'meta'"
    ).fetchone()
    return 1 if tables[0] else None


def _delete_files(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
