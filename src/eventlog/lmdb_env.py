"""Opening LMDB environments the one safe way: checked first, durable flags asserted."""

from __future__ import annotations

from pathlib import Path

import lmdb

from ..errors import CorruptLog, DiskFull, StorageError, StorageFailed
from .preflight import check_data_file

# What durability rests on: every commit syncs data and meta pages, through the write path.
DURABLE_FLAGS = {"sync": True, "metasync": True, "writemap": False, "map_async": False}


def open_env(
    path: Path, *, map_size: int, max_dbs: int, readonly: bool = False
) -> lmdb.Environment:
    """Open (creating if needed) an LMDB environment after checking its data file."""
    if not readonly:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    check_data_file(path / "data.mdb")
    try:
        env = lmdb.open(
            str(path),
            map_size=map_size,
            max_dbs=max_dbs,
            readonly=readonly,
            create=not readonly,
            sync=True,
            metasync=True,
            writemap=False,
            map_async=False,
            lock=True,
            mode=0o600,
        )
    except (lmdb.CorruptedError, lmdb.InvalidError, lmdb.VersionMismatchError) as exc:
        raise CorruptLog(f"LMDB cannot open {path}: {exc}") from exc
    except lmdb.Error as exc:
        raise storage_failure(exc) from exc
    flags: dict[str, object] = dict(env.flags())
    wrong = {k: flags[k] for k, want in DURABLE_FLAGS.items() if flags[k] != want}
    if wrong:
        env.close()
        raise StorageError(f"LMDB opened {path} without its durable flags: {wrong}")
    env.reader_check()
    return env


def storage_failure(exc: lmdb.Error) -> StorageError:
    """The fail-stop error for a failed LMDB write: a full disk, or any other I/O failure."""
    text = str(exc)
    if "No space left" in text or "quota exceeded" in text:
        return DiskFull(f"the disk is full; writes are stopped until restart ({text})")
    return StorageFailed(f"a write to the log failed; writes are stopped until restart ({text})")
