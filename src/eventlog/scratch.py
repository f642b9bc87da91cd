"""Scratch folders inside the data dir, for work that folds memory text aside (a replay).

They live inside the data dir because what they hold must stay where erasure reaches; each is
named after the process that made it, so folders left by a process that died are removed by
the next one (and at boot).
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path


def scratch_root(data_dir: Path) -> Path:
    return data_dir / "replay"


def clear_stale(root: Path) -> None:
    """Remove scratch folders whose process is gone."""
    if not root.is_dir():
        return
    for folder in root.iterdir():
        pid = folder.name.partition("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def new_scratch(root: Path) -> Path:
    clear_stale(root)
    folder = root / f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
    folder.mkdir(mode=0o700, parents=True)
    return folder


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
