"""SQLite connections for read models: derived data, so speed over durability, and erasable.

A projection can always be rebuilt from the log, so commits skip fsync. Erasure needs more
than DELETE: ``secure_delete`` zeroes freed cells, and a TRUNCATE checkpoint empties the WAL
file, which would otherwise keep old page images holding the erased text.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path


def connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA secure_delete=ON")
    conn.execute("PRAGMA foreign_keys=ON")
    path.chmod(0o600)
    return conn


def scrub(conn: sqlite3.Connection) -> None:
    """Push deleted bytes out of the WAL file after an erase."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
