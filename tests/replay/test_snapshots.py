"""Snapshots of the memories projection: a replay from one equals a replay from the first
record, and an erase reaches them before it returns."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mnemolog.eventlog import Actor
from mnemolog.eventlog.scratch import scratch_root
from mnemolog.memory import NewMemory, WriteOutcome, world
from mnemolog.memory.world import MemoriesAt
from mnemolog.projections.memories import snapshots
from mnemolog.projections.memories.snapshots import DEFAULT_KEEP, restore, snapshot_files
from mnemolog.replay.believed import believed
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

ACTOR = Actor(agent_id="agent-snapshots", protocol="rest")
SECRET = "Ada's safe combination is 31-07-1982"


def write_batches(runtime: Runtime, batches: int) -> list[WriteOutcome]:
    """Four facts a batch; each batch waits for the copy it set off, so the snapshots taken
    (and pruned) are the same on every run."""
    written: list[WriteOutcome] = []
    for batch in range(batches):
        items = [
            NewMemory(content=f"Fact {batch}-{i}: Ada's locker code is {batch}{i}7")
            for i in range(4)
        ]
        written += runtime.core.writes.write(f"c{batch % 2}", items, ACTOR)
        runtime.core.snapshots.wait_idle()
    return written


def secret_then_fillers(runtime: Runtime, secret: str, fillers: int) -> WriteOutcome:
    """Write ``secret``, then ``fillers`` facts one at a time, so that snapshots hold it."""
    target = runtime.core.writes.write("c", [NewMemory(content=secret)], ACTOR)[0]
    for i in range(fillers):
        runtime.core.writes.write(
            "c", [NewMemory(content=f"Filler fact number {i} about gardening")], ACTOR
        )
    runtime.core.snapshots.wait_idle()
    return target


def newest_at_or_before(folder: Path, seq: int) -> int:
    return max(taken for taken, _ in snapshot_files(folder) if taken <= seq)


def test_a_replay_from_a_snapshot_equals_one_from_the_first_record(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    runtime = Runtime(Settings(data_dir=data_dir, embedder="quality", snapshot_every=8))
    try:
        written = write_batches(runtime, 6)
        runtime.core.chains.forget(written[3].memory_id, "wrong", ACTOR)
        snapshots = snapshot_files(data_dir / "snapshots")
        assert len(snapshots) == DEFAULT_KEEP  # older ones were pruned
        head = runtime.log.head().seq
        middle = snapshots[0][0] + 3
        for seq in (middle, head):
            states = []
            for state in (
                MemoriesAt.nearest(
                    runtime.log, runtime.sealer, scratch_root(data_dir), seq, data_dir / "snapshots"
                ),
                MemoriesAt(runtime.log, runtime.sealer, scratch_root(data_dir), seq),
            ):
                try:
                    states.append(
                        (
                            state.started_from,
                            believed(state.path, as_of_ns=0, seq=seq, container_tag=None),
                        )
                    )
                finally:
                    state.close()
            (from_snapshot, near), (from_start, far) = states
            assert from_snapshot == newest_at_or_before(data_dir / "snapshots", seq)
            assert from_start == 0
            assert near == far
            chains = {o.memory_id for o in written if o.seq <= seq}
            assert {m.id for m in near.memories} == chains
    finally:
        runtime.close()


def test_a_snapshot_pruned_while_a_replay_starts_falls_back_to_an_older_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "data"
    runtime = Runtime(Settings(data_dir=data_dir, embedder="quality", snapshot_every=8))
    try:
        write_batches(runtime, 4)
        folder = data_dir / "snapshots"
        scratch = scratch_root(data_dir)
        head = runtime.log.head().seq
        listed = snapshot_files(folder)
        # What a replay sees when a running server prunes between listing and copying: the
        # newest listed snapshot is gone by the time it is opened.
        gone = folder / f"memories-{listed[-1][0] + 1:012d}.sqlite3"
        assert not gone.exists()
        monkeypatch.setattr(world, "snapshot_files", lambda _: [*listed, (listed[-1][0] + 1, gone)])
        state = MemoriesAt.nearest(runtime.log, runtime.sealer, scratch, head, folder)
        try:
            assert state.started_from == listed[-1][0]
            assert state.memories.last_seq() == head
        finally:
            state.close()
        monkeypatch.setattr(world, "snapshot_files", lambda _: [(1, gone)])
        state = MemoriesAt.nearest(runtime.log, runtime.sealer, scratch, head, folder)
        try:
            assert state.started_from == 0
            assert state.memories.last_seq() == head
        finally:
            state.close()
        assert list(scratch.iterdir()) == []  # no folder left by the failed copy
    finally:
        runtime.close()


def test_an_erase_scrubs_every_snapshot_before_it_returns(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    secret = SECRET
    runtime = Runtime(Settings(data_dir=data_dir, embedder="quality", snapshot_every=4))
    try:
        target = secret_then_fillers(runtime, secret, 5)
        found = snapshot_files(data_dir / "snapshots")
        assert all(path.suffix == ".zst" for _, path in found)
        assert any(secret.encode() in readable_bytes(path) for _, path in found)
        runtime.core.chains.erase(target.memory_id, ACTOR)
        assert files_holding(data_dir, secret.encode()) == []
    finally:
        runtime.close()
    assert files_holding(data_dir, secret.encode()) == []


class SlowCopies:
    """``sqlite3`` for the snapshots module, whose copies dwell before their VACUUM: a copy
    holding the whole projection in its temporary file is then still being taken when the
    next call comes."""

    Error = sqlite3.Error

    def __init__(self) -> None:
        self.started = threading.Event()

    def connect(self, *args: Any, **kwargs: Any) -> SlowConnection:
        return SlowConnection(sqlite3.connect(*args, **kwargs), self.started)


class SlowConnection:
    def __init__(self, conn: sqlite3.Connection, started: threading.Event) -> None:
        self._conn = conn
        self._started = started

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql == "VACUUM":
            self._started.set()
            time.sleep(0.5)
        return self._conn.execute(sql, *args)

    def backup(self, target: SlowConnection) -> None:
        self._conn.backup(target._conn)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_an_erase_reaches_a_snapshot_still_being_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "data"
    secret = SECRET
    runtime = Runtime(Settings(data_dir=data_dir, embedder="quality", snapshot_every=1))
    try:
        target = runtime.core.writes.write("c", [NewMemory(content=secret)], ACTOR)[0]
        runtime.core.snapshots.wait_idle()
        slow = SlowCopies()
        monkeypatch.setattr(snapshots, "sqlite3", slow)
        runtime.core.writes.write("c", [NewMemory(content="A filler fact about gardening")], ACTOR)
        assert slow.started.wait(30)  # the copy now holds the secret in memories.tmp
        runtime.core.chains.erase(target.memory_id, ACTOR)
        assert files_holding(data_dir, secret.encode()) == []
    finally:
        runtime.close()
    assert files_holding(data_dir, secret.encode()) == []


def readable_bytes(path: Path) -> bytes:
    """A file's bytes as anyone could read them: a compressed snapshot decompressed."""
    if path.suffix != ".zst":
        return path.read_bytes()
    plain = path.with_name(path.name + ".read")
    try:
        restore(path, plain)
        return plain.read_bytes()
    finally:
        plain.unlink(missing_ok=True)


def files_holding(folder: Path, needle: bytes) -> list[Path]:
    """Files under ``folder`` whose bytes (decompressed, for a snapshot) hold ``needle``; one
    that vanishes while it is being read (a snapshot pruned, a copy renamed into place) holds
    nothing any more."""
    found = []
    for path in folder.rglob("*"):
        try:
            if path.is_file() and needle in readable_bytes(path):
                found.append(path)
        except FileNotFoundError:
            continue
    return found


def test_a_snapshot_is_compressed_and_holds_no_vectors(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    runtime = Runtime(Settings(data_dir=data_dir, embedder="quality", snapshot_every=8))
    try:
        write_batches(runtime, 3)
        seq, path = snapshot_files(data_dir / "snapshots")[-1]
        plain = tmp_path / "plain.sqlite3"
        restore(path, plain)
        assert path.stat().st_size < plain.stat().st_size
        conn = sqlite3.connect(plain)
        try:
            assert conn.execute("SELECT count(*) FROM vectors").fetchone() == (0,)
            assert conn.execute("SELECT count(*) FROM versions").fetchone()[0] > 0
        finally:
            conn.close()
        state = MemoriesAt.nearest(
            runtime.log, runtime.sealer, scratch_root(data_dir), seq, data_dir / "snapshots"
        )
        try:
            assert state.started_from == seq
            assert state.memories.last_seq() == seq
        finally:
            state.close()
    finally:
        runtime.close()


def test_a_snapshot_taken_uncompressed_is_still_read_and_scrubbed(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    secret = SECRET
    runtime = Runtime(Settings(data_dir=data_dir, embedder="quality", snapshot_every=4))
    try:
        target = secret_then_fillers(runtime, secret, 4)
        # What a store written before compression holds: the plain SQLite file.
        for seq, path in snapshot_files(data_dir / "snapshots"):
            restore(path, path.with_name(f"memories-{seq:012d}.sqlite3"))
            path.unlink()
        seq, older = snapshot_files(data_dir / "snapshots")[-1]
        assert older.suffix == ".sqlite3" and secret.encode() in older.read_bytes()
        state = MemoriesAt.nearest(
            runtime.log, runtime.sealer, scratch_root(data_dir), seq, data_dir / "snapshots"
        )
        try:
            assert state.started_from == seq
        finally:
            state.close()
        runtime.core.chains.erase(target.memory_id, ACTOR)
        assert files_holding(data_dir, secret.encode()) == []
    finally:
        runtime.close()
