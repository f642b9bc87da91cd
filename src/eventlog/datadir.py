"""The data directory: where each store lives, and the lock that gives one process ownership."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from ..errors import DataDirLocked

LOCK_FILE = "mnemolog.lock"


def log_dir(data_dir: Path) -> Path:
    """The LMDB environment of the event log."""
    return data_dir / "log"


def keys_dir(data_dir: Path) -> Path:
    """The LMDB environment of the subject key store (kept apart so it can be compacted)."""
    return data_dir / "keys"


class DataDirLock:
    """An exclusive ``flock`` on the data dir, released when the process dies.

    LMDB alone lets several processes write one environment; mnemolog's single-writer group
    commit and its projections need exactly one owner.
    """

    def __init__(self, data_dir: Path) -> None:
        self._path = data_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        self._path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise DataDirLocked(
                f"data dir {self._path.parent} is in use by another mnemolog process "
                f"(pid {owner}); stop it or choose another --data-dir"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> DataDirLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
