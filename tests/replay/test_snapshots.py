"""Snapshots of the memories projection: a replay from one equals a replay from the first
record, and an erase reaches them before it returns."""

from __future__ import annotations

import time
from pathlib import Path

from mnemolog.eventlog import Actor
from mnemolog.eventlog.scratch import scratch_root
from mnemolog.memory import NewMemory
from mnemolog.memory.world import MemoriesAt
from mnemolog.projections.snapshots import nearest_snapshot, snapshot_files
from mnemolog.replay.believed import believed
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

ACTOR = Actor(agent_id="agent-snapshots", protocol="rest")


def wait_for_snapshots(folder: Path, count: int) -> list[tuple[int, Path]]:
    deadline = time.monotonic() + 30
    while len(found := snapshot_files(folder)) < count:
        assert time.monotonic() < deadline, found
        time.sleep(0.05)
    return found


def test_a_replay_from_a_snapshot_equals_one_from_the_first_record(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    runtime = Runtime(Settings(data_dir=data_dir, embedder="quality", snapshot_every=8))
    try:
        written = []
        for batch in range(6):
            items = [
                NewMemory(content=f"Fact {batch}-{i}: Ada's locker code is {batch}{i}7")
                for i in range(4)
            ]
            written += runtime.core.writes.write(f"c{batch % 2}", items, ACTOR)
        runtime.core.chains.forget(written[3].memory_id, "wrong", ACTOR)
        snapshots = wait_for_snapshots(data_dir / "snapshots", 2)
        head = runtime.log.head().seq
        middle = snapshots[0][0] + 3
        for seq in (middle, head):
            snapshot = nearest_snapshot(data_dir / "snapshots", seq)
            assert snapshot is not None and snapshot[0] <= seq
            states = []
            for start in (snapshot[1], None):
                state = MemoriesAt(runtime.log, runtime.sealer, scratch_root(data_dir), seq, start)
                try:
                    assert state.started_from == (0 if start is None else snapshot[0])
                    states.append(believed(state.path, as_of_ns=0, seq=seq, container_tag=None))
                finally:
                    state.close()
            assert states[0] == states[1]
            chains = {o.memory_id for o in written if o.seq <= seq}
            assert {m.id for m in states[0].memories} == chains
    finally:
        runtime.close()


def test_an_erase_scrubs_every_snapshot_before_it_returns(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    secret = "Ada's safe combination is 31-07-1982"
    runtime = Runtime(Settings(data_dir=data_dir, embedder="quality", snapshot_every=4))
    try:
        target = runtime.core.writes.write("c", [NewMemory(content=secret)], ACTOR)[0]
        for i in range(5):
            runtime.core.writes.write(
                "c", [NewMemory(content=f"Filler fact number {i} about gardening")], ACTOR
            )
        found = wait_for_snapshots(data_dir / "snapshots", 1)
        assert any(secret.encode() in path.read_bytes() for _, path in found)
        runtime.core.chains.erase(target.memory_id, ACTOR)
        leaks = [
            p for p in data_dir.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()
        ]
        assert leaks == []
    finally:
        runtime.close()
    leaks = [p for p in data_dir.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert leaks == []
