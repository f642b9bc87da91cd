"""Making file-system changes durable: fsync of files, directories and atomic replacements."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_path(path: Path) -> None:
    """fsync a file or a directory (a directory's fsync makes renames in it durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(directory: Path) -> None:
    """fsync every file directly in ``directory``, then the directory itself."""
    for path in directory.iterdir():
        if path.is_file():
            fsync_path(path)
    fsync_path(directory)


def write_durably(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file, fsync it and rename it over ``path``."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.replace(tmp, path)
