"""Snapshots of the memories projection, so that a replay as of T starts near T.

Every ``every`` records the server copies ``memories.sqlite3`` (SQLite's online backup, from
its own read connection: a consistent copy that does not stop writes) to
``snapshots/memories-<seq>.sqlite3.zst``; a replay as of T opens the newest snapshot at or
before T and folds only the records after it. The newest ``keep`` snapshots are kept.

A snapshot is small: no vectors (a replay as of an instant never reads them), and the file
compressed with zstd: at 100k memories 288 bytes a memory instead of 698. A snapshot taken
before compression (``.sqlite3``) is read and scrubbed as it is.

A snapshot holds memory text, so erasure must reach it: this is a projection in the server's
runner, and when it applies an erase it scrubs that subject out of every snapshot before the
erase call returns (the same columns a fold from the log leaves empty once the key is gone, so
a replay from a scrubbed snapshot equals one from the first record). It records the last seq
it applied in a small file (now and then; a stale one only means re-reading some records), so
an erase applied by the memories projection just before a crash is scrubbed at the next boot.
An erase waits for a copy being taken to finish, then scrubs it with the others; a copy taken
across a scrub all the same (``take`` called from elsewhere) is thrown away, never kept.
"""

from __future__ import annotations

import logging
import re
import shutil
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import zstandard

from ...eventlog import StoredRecord
from ...eventlog.events import SubjectErased
from ...eventlog.scratch import clear_stale
from ..sqlite import connect, scrub

log = logging.getLogger(__name__)

DEFAULT_EVERY = 20_000
DEFAULT_KEEP = 3
_PERSIST_EVERY = 1000  # records between two writes of the position file
_NAME = re.compile(r"^memories-(\d{12})\.sqlite3(\.zst)?$")
_COMPRESSED = ".zst"
# zstd's level 1: at 100k memories 0.3 s for a 3.2x smaller file; level 9 gained 6% in 4 s.
_LEVEL = 1
_BLOCK = 1 << 20


def snapshot_files(directory: Path) -> list[tuple[int, Path]]:
    """(seq, path) of every snapshot in ``directory``, oldest first."""
    if not directory.is_dir():
        return []
    found = []
    for path in directory.iterdir():
        match = _NAME.match(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def restore(snapshot: Path, target: Path) -> None:
    """Write the SQLite file of ``snapshot`` at ``target``: decompressed, or copied if it was
    taken uncompressed. ``FileNotFoundError`` if it is gone (pruned meanwhile)."""
    if snapshot.suffix != _COMPRESSED:
        shutil.copyfile(snapshot, target)
        return
    with zstandard.open(snapshot, "rb") as source, target.open("wb") as out:
        shutil.copyfileobj(source, out, _BLOCK)


def _compress(source: Path, target: Path) -> None:
    packer = zstandard.ZstdCompressor(level=_LEVEL)
    with source.open("rb") as plain, zstandard.open(target, "wb", cctx=packer) as out:
        shutil.copyfileobj(plain, out, _BLOCK)
    target.chmod(0o600)


def _slim(conn: sqlite3.Connection) -> None:
    """Leave out of a copy what a replay never reads: vectors. The indexes stay: made again
    when a replay opens a copy, they took 0.65 s at 100k memories, and cost 64 bytes a memory
    compressed."""
    conn.execute("DELETE FROM vectors")
    conn.commit()
    conn.execute("VACUUM")


class Snapshots:
    name = "snapshots"

    def __init__(
        self,
        directory: Path,
        source: Path,
        *,
        every: int = DEFAULT_EVERY,
        keep: int = DEFAULT_KEEP,
        scratch: Path | None = None,
    ) -> None:
        """``scratch`` is where replays fold their copies: an erase also removes those a dead
        replay left behind (a running replay removes its own when it ends)."""
        self._directory = directory
        self._scratch = scratch
        self._source = source
        self._every = every
        self._keep = keep
        self._position_file = directory / "position"
        self._lock = threading.Lock()  # snapshot files: scrubbing, renaming, pruning
        self._erasures = 0  # bumped by each scrub; a copy taken across one is discarded
        self._taker: threading.Thread | None = None
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        for stale in directory.glob("*.tmp*"):  # copies, their WAL files, compressed ones
            stale.unlink()
        self._seen = self._read_position()
        self._persisted = self._seen
        taken = self.all()
        self._newest = taken[-1][0] if taken else 0  # kept here: apply runs on every write

    # --- reading -----------------------------------------------------------------------------

    def all(self) -> list[tuple[int, Path]]:
        """(seq, path) of every snapshot, oldest first."""
        return snapshot_files(self._directory)

    # --- the projection ----------------------------------------------------------------------

    def last_seq(self) -> int:
        return self._seen

    def apply(self, records: Sequence[StoredRecord]) -> None:
        erased = [
            stored.record.event
            for stored in records
            if isinstance(stored.record.event, SubjectErased)
        ]
        if erased:
            self.scrub(erased)
        self._seen = records[-1].seq
        # Written now and then, not per batch: a stale position only makes the next boot
        # re-read some records (re-scrubbing an erase is harmless). No fsync: derived data.
        if self._seen - self._persisted >= _PERSIST_EVERY:
            self._persist()
        due = self._seen - self._newest >= self._every
        if due and (self._taker is None or not self._taker.is_alive()):
            self._taker = threading.Thread(target=self.take, name="mnemolog-snapshot")
            self._taker.start()

    def reset(self) -> None:
        self.close()
        with self._lock:
            for _, path in self.all():
                path.unlink()
            self._position_file.unlink(missing_ok=True)
            self._seen = self._persisted = self._newest = 0

    def wait_idle(self) -> None:
        """Return once no copy is being taken (none starts until the next record applies)."""
        if self._taker is not None:
            self._taker.join()

    def close(self) -> None:
        self.wait_idle()
        if self._seen != self._persisted:
            self._persist()

    def _persist(self) -> None:
        self._position_file.write_text(str(self._seen))
        self._persisted = self._seen

    # --- taking and scrubbing ---------------------------------------------------------------

    def take(self) -> int | None:
        """Copy the memories projection as it is now; its seq, or None if it was discarded."""
        with self._lock:
            erasures = self._erasures
        tmp = self._directory / "memories.tmp"
        packed = self._directory / "memories.tmp.zst"
        try:
            source = sqlite3.connect(f"file:{self._source}?mode=ro", uri=True)
            try:
                target = sqlite3.connect(tmp)
                try:
                    source.backup(target)
                    _slim(target)
                    row = target.execute("SELECT value FROM meta WHERE key = 'last_seq'").fetchone()
                finally:
                    target.close()
            finally:
                source.close()
            seq = 0 if row is None else int(row[0])
            if seq:
                _compress(tmp, packed)
            tmp.unlink()
            with self._lock:
                if erasures != self._erasures or seq == 0:
                    packed.unlink(missing_ok=True)
                    return None
                packed.replace(self._directory / f"memories-{seq:012d}.sqlite3{_COMPRESSED}")
                self._newest = max(self._newest, seq)
                for _, old in self.all()[: -self._keep]:
                    old.unlink()
            return seq
        except (OSError, sqlite3.Error, zstandard.ZstdError) as exc:  # an optimisation: log, go on
            log.warning("snapshot of the memories projection failed: %s", exc)
            tmp.unlink(missing_ok=True)
            packed.unlink(missing_ok=True)
            return None

    def scrub(self, events: Sequence[SubjectErased]) -> None:
        """Empty, in every snapshot, what the erased subjects' keys opened (in one pass over
        each snapshot: erasing a container erases each of its chains too)."""
        targets = [target for event in events if (target := _target(event)) is not None]
        if not targets:
            return
        if self._scratch is not None:
            clear_stale(self._scratch)
        # A copy being taken holds the subject's text in its temporary file: let it finish and
        # scrub it with the others, so that nothing erased is left once the erase returns.
        self.wait_idle()
        with self._lock:
            self._erasures += 1
            for _, path in self.all():
                if path.suffix == _COMPRESSED:
                    self._scrub_compressed(path, targets)
                else:
                    _scrub_file(path, targets)

    def _scrub_compressed(self, path: Path, targets: Sequence[tuple[str, str, str]]) -> None:
        """Scrub a compressed snapshot: decompressed aside, scrubbed, compressed over it."""
        plain = self._directory / "scrubbing.tmp"
        packed = self._directory / "scrubbing.tmp.zst"
        try:
            restore(path, plain)
            _scrub_file(plain, targets)
            _compress(plain, packed)
            packed.replace(path)
        finally:
            for made in self._directory.glob("scrubbing.tmp*"):
                made.unlink()

    def _read_position(self) -> int:
        try:
            return int(self._position_file.read_text())
        except (OSError, ValueError):
            return 0


def _scrub_file(path: Path, targets: Sequence[tuple[str, str, str]]) -> None:
    conn = connect(path)
    try:
        conn.execute("BEGIN")
        for scope, where, arg in targets:
            _scrub_subject(conn, scope, where, arg)
        conn.execute("COMMIT")
        scrub(conn)
    finally:
        conn.close()


def _target(event: SubjectErased) -> tuple[str, str, str] | None:
    """The scope of an erasure, and the rows it reaches in a snapshot (a condition and its
    argument); None: it reaches none."""
    if event.scope == "memory" and event.memory_id is not None:
        return event.scope, "memory_id = ?", event.memory_id
    if event.scope in ("container", "profile") and event.container_tag is not None:
        return event.scope, "container_tag = ?", event.container_tag
    if event.scope == "version" and event.version_id is not None:
        return event.scope, "version_id = ?", event.version_id
    return None


def _scrub_subject(conn: sqlite3.Connection, scope: str, where: str, arg: str) -> None:
    if scope in ("profile", "container") and _has_table(conn, "profile_history"):
        conn.execute("UPDATE profile_history SET profile = NULL WHERE " + where, (arg,))
    if scope == "profile":
        conn.execute("UPDATE profiles SET profile = NULL WHERE " + where, (arg,))
        return
    conn.execute(
        f"DELETE FROM vectors WHERE row_id IN (SELECT row_id FROM versions WHERE {where})",
        (arg,),
    )
    conn.execute(
        f"UPDATE versions SET content = NULL, content_hash = NULL, metadata = NULL,"
        f" context = NULL WHERE {where}",
        (arg,),
    )
    if scope != "version":  # a version's chain keeps its reason
        conn.execute(f"UPDATE chains SET forgotten_reason = NULL WHERE {where}", (arg,))
    if scope == "container":
        conn.execute("UPDATE profiles SET profile = NULL WHERE " + where, (arg,))


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    """Whether a snapshot has ``name`` (one taken before it was added has not)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
    return found.fetchone() is not None
