"""The memories projection's ``keyed_writes``: a ``write.keyed`` folded into the answer a retry
is given (each outcome's seq counted back from the keyed record), restored by a rebuild,
scoped to (container, agent, key digest), and dropped with its container's erasure."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemolog.eventlog import Actor, Draft, LmdbEventLog, LmdbKeyStore, Sealer
from mnemolog.eventlog.events import (
    AnyEvent,
    KeyedOutcome,
    MemoryDeduplicated,
    MemoryFlagged,
    MemoryWritten,
    SubjectErased,
    WriteKeyed,
)
from mnemolog.projections.memories.projection import MemoryProjection
from mnemolog.projections.runner import ProjectionRunner

ACTOR = Actor(agent_id="agent-1", protocol="rest")


class Store:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.log = LmdbEventLog(root / "log")
        self.keys = LmdbKeyStore(root / "keys")
        self.sealer = Sealer(self.keys)
        self.projection = MemoryProjection(root / "memories.sqlite3", self.sealer)
        self.runner = ProjectionRunner(self.log, [self.projection])

    def append(self, *events: AnyEvent) -> list[int]:
        appended = self.log.append([Draft(ACTOR, e) for e in events])
        self.runner.sync_to(appended.seqs[-1])
        return appended.seqs

    def written(self, memory_id: str, container: str = "c1") -> MemoryWritten:
        return MemoryWritten(
            memory_id=memory_id,
            version_id=f"{memory_id}-v1",
            container_tag=container,
            content=self.sealer.seal_text(f"memory:{memory_id}", f"text of {memory_id}"),
        )

    def keyed(self, container: str, digest: str, *outcomes: KeyedOutcome) -> WriteKeyed:
        return WriteKeyed(
            container_tag=container,
            agent_id=ACTOR.agent_id,
            key_digest=digest,
            fingerprint=self.sealer.seal_text(f"container:{container}", f"fp-{digest}"),
            outcomes=list(outcomes),
        )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path)
    try:
        yield s
    finally:
        s.runner.close()
        s.keys.close()
        s.log.close()


def outcome(memory_id: str, status: str, events: int) -> KeyedOutcome:
    return KeyedOutcome(
        memory_id=memory_id,
        version_id=f"{memory_id}-v1",
        version=1,
        status=status,  # type: ignore[arg-type]
        events=events,
    )


def test_a_keyed_write_is_folded_with_the_seq_of_each_outcome(store: Store) -> None:
    store.append(store.written("m0"))  # seq 1: the memory a later write duplicates
    flagged = MemoryFlagged(
        memory_id="m1",
        version_id="m1-v1",
        container_tag="c1",
        reasons=["directive"],
        detector="test",
    )
    seqs = store.append(
        store.written("m1"),  # seq 2
        flagged,  # seq 3, the same write's
        MemoryDeduplicated(memory_id="m0", version_id="m0-v1", container_tag="c1"),  # seq 4
        store.keyed("c1", "d1", outcome("m1", "created", 2), outcome("m0", "deduplicated", 1)),
    )
    row = store.projection.keyed_write("c1", "agent-1", "d1")
    assert row is not None and row.seq == seqs[-1] == 5
    assert row.fingerprint == "fp-d1"
    assert row.seqs() == [2, 4]
    assert [o.status for o in row.outcomes] == ["created", "deduplicated"]
    assert store.projection.keyed_write("c1", "agent-2", "d1") is None  # another agent's
    assert store.projection.keyed_write("c2", "agent-1", "d1") is None  # another container

    rebuilt = MemoryProjection(store.root / "rebuilt.sqlite3", store.sealer)
    try:
        ProjectionRunner(store.log, [rebuilt]).catch_up()
        assert rebuilt.keyed_write("c1", "agent-1", "d1") == row
        assert rebuilt.dump() == store.projection.dump()
    finally:
        rebuilt.close()


def test_erasing_a_container_drops_its_keyed_writes_only(store: Store) -> None:
    store.append(store.written("a", "c1"), store.keyed("c1", "d", outcome("a", "created", 1)))
    store.append(store.written("b", "c2"), store.keyed("c2", "d", outcome("b", "created", 1)))
    store.keys.destroy("container:c1")
    store.append(SubjectErased(subject="container:c1", scope="container", container_tag="c1"))
    assert store.projection.keyed_write("c1", "agent-1", "d") is None
    assert store.projection.keyed_write("c2", "agent-1", "d") is not None

    # A rebuild after the erasure cannot open c1's fingerprint: the key stays unused.
    rebuilt = MemoryProjection(store.root / "rebuilt.sqlite3", store.sealer)
    try:
        ProjectionRunner(store.log, [rebuilt]).catch_up()
        assert rebuilt.keyed_write("c1", "agent-1", "d") is None
        assert rebuilt.keyed_write("c2", "agent-1", "d") is not None
    finally:
        rebuilt.close()
