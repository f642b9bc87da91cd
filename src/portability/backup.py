"""Backups of a data dir: compacting copies of the log and the key store, and their restore.

Only the two LMDB environments are copied: everything else under a data dir (projections,
indexes) is derived from the log, and a restore rebuilds it. LMDB's compacting copy reads one
snapshot in a read transaction, so it runs beside a live server, which keeps writing.

The log is copied before the key store. Every key is durable before the first event sealed
under it is appended, so each event in the copied log finds its key in the copied store,
unless the key was destroyed in between: an erase, which the backup then keeps.

A key store copy holds the keys of every subject not erased when it was made: a subject erased
after a backup is readable again in that backup (see docs/portability.md).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import lmdb
import msgspec

from ..clock import iso
from ..errors import CorruptLog, InvalidInput
from ..eventlog.datadir import DataDirLock, keys_dir, log_dir
from ..eventlog.lmdb_env import open_env, storage_failure
from ..eventlog.verify import VerifyReport, verify_log
from ..fsync import fsync_path, fsync_tree, write_durably

MANIFEST = "mnemolog-backup.json"
_DATA = "data.mdb"


class Manifest(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    format: str = "mnemolog-backup"
    version: int = 1
    created_at: str
    log_head_seq: int
    log_head_digest: str


def _quiet(step: str) -> None:
    """Where nobody listens to the steps."""


def backup(data_dir: Path, dest: Path, say: Callable[[str], None] = _quiet) -> Manifest:
    """Copy the data dir's log and key store into ``dest`` (new, or an empty directory);
    ``say`` hears each step as it starts (the copy is one call of LMDB's, with no progress)."""
    sources = (log_dir(data_dir), keys_dir(data_dir))
    for source in sources:
        if not (source / _DATA).is_file():
            raise InvalidInput(f"no store at {source}: is {data_dir} a mnemolog data dir?")
    _refuse_non_empty(dest)
    dest = dest.absolute()
    staging = dest.with_name(f".{dest.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(mode=0o700, parents=True)
    try:
        say(f"copying the log ({_mib(sources[0] / _DATA)})")
        _compacting_copy(sources[0], staging / "log", max_dbs=4)
        say(f"copying the key store ({_mib(sources[1] / _DATA)})")
        _compacting_copy(sources[1], staging / "keys", max_dbs=2)
        say("verifying the copied log")
        report = _verified(staging / "log")
        manifest = Manifest(
            created_at=iso(time.time_ns()) or "",
            log_head_seq=report.head_seq,
            log_head_digest=report.head_digest,
        )
        write_durably(staging / MANIFEST, msgspec.json.format(msgspec.json.encode(manifest)))
        fsync_path(staging)
        os.replace(staging, dest)  # an empty directory is replaced whole
        fsync_path(dest.parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest


def restore(source: Path, data_dir: Path, say: Callable[[str], None] = _quiet) -> VerifyReport:
    """Put a backup's log and key store into an empty data dir; the projections are rebuilt
    when the data dir is next opened. The restored log must verify up to the backup's head."""
    try:
        manifest = msgspec.json.decode((source / MANIFEST).read_bytes(), type=Manifest)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise InvalidInput(f"{source} is not a mnemolog backup: {exc}") from exc
    _refuse_non_empty(data_dir)
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    with DataDirLock(data_dir):
        staging = data_dir / ".restore"
        shutil.rmtree(staging, ignore_errors=True)
        try:
            for name in ("log", "keys"):
                say(f"copying the {name} ({_mib(source / name / _DATA)})")
                (staging / name).mkdir(mode=0o700, parents=True)
                shutil.copyfile(source / name / _DATA, staging / name / _DATA)
                os.chmod(staging / name / _DATA, 0o600)
                fsync_tree(staging / name)
            say("verifying the copied log")
            report = _verified(staging / "log")
            head = (report.head_seq, report.head_digest)
            if head != (manifest.log_head_seq, manifest.log_head_digest):
                raise CorruptLog(
                    f"the backup's log ends at seq {report.head_seq}, its manifest says"
                    f" {manifest.log_head_seq}"
                )
            os.replace(staging / "log", log_dir(data_dir))
            os.replace(staging / "keys", keys_dir(data_dir))
            staging.rmdir()
            fsync_path(data_dir)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return report


def _mib(path: Path) -> str:
    return f"{path.stat().st_size / 2**20:,.1f} MiB"


def _compacting_copy(source: Path, target: Path, *, max_dbs: int) -> None:
    target.mkdir(mode=0o700)
    env = open_env(source, map_size=0, max_dbs=max_dbs, readonly=True)
    try:
        env.copy(str(target), compact=True)
    except lmdb.Error as exc:
        raise storage_failure(exc) from exc
    finally:
        env.close()
    os.chmod(target / _DATA, 0o600)
    fsync_tree(target)


def _verified(log: Path) -> VerifyReport:
    report = verify_log(log)
    if not report.ok:
        raise CorruptLog(f"the copied log does not verify: {report.reason}")
    return report


def _refuse_non_empty(path: Path) -> None:
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise InvalidInput(f"{path} exists and is not empty")
