"""The memories projection: a fold over the log that a rebuild reproduces exactly."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemolog.eventlog import (
    Actor,
    Draft,
    KeyStore,
    LmdbEventLog,
    LmdbKeyStore,
    Sealer,
    StoredRecord,
)
from mnemolog.eventlog.events import (
    ChainForgotten,
    ChainRestored,
    MemoryDeduplicated,
    MemoryEdited,
    MemorySuperseded,
    MemoryWritten,
    SubjectErased,
)
from mnemolog.projections.memories.projection import MemoryProjection
from mnemolog.projections.runner import ProjectionRunner
from mnemolog.texts import content_hash

ACTOR = Actor(agent_id="agent-1", protocol="rest")


@dataclass
class World:
    """A log, its keys and a projection kept up to date after every append."""

    root: Path
    log: LmdbEventLog
    keys: KeyStore
    sealer: Sealer
    projection: MemoryProjection
    runner: ProjectionRunner
    chains: dict[str, int] = field(default_factory=dict)  # memory_id -> latest version

    def append(self, event: object) -> None:
        appended = self.log.append([Draft(ACTOR, event)])  # type: ignore[arg-type]
        self.runner.sync_to(appended.seqs[-1])

    def seal(self, memory_id: str, text: str) -> object:
        return self.sealer.seal_text(f"memory:{memory_id}", text)

    def vector(self, memory_id: str) -> object:
        v = np.random.default_rng(len(self.chains)).standard_normal(8).astype("<f4")
        return self.sealer.seal(f"memory:{memory_id}", v.tobytes())


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    yield from _world(tmp_path)


def _world(root: Path) -> Iterator[World]:
    log = LmdbEventLog(root / "log")
    keys = LmdbKeyStore(root / "keys")
    sealer = Sealer(keys)
    projection = MemoryProjection(root / "projections" / "memories.sqlite3", sealer)
    runner = ProjectionRunner(log, [projection])
    try:
        yield World(root, log, keys, sealer, projection, runner)
    finally:
        runner.close()
        keys.close()
        log.close()


def write(
    w: World,
    memory_id: str,
    text: str,
    container: str = "c1",
    *,
    vector: bool = False,
    context: str | None = None,
) -> None:
    w.append(
        MemoryWritten(
            memory_id=memory_id,
            version_id=f"{memory_id}-v1",
            container_tag=container,
            content=w.seal(memory_id, text),  # type: ignore[arg-type]
            embedding=w.vector(memory_id) if vector else None,  # type: ignore[arg-type]
            context=None if context is None else w.seal(memory_id, context),  # type: ignore[arg-type]
        )
    )
    w.chains[memory_id] = 1


def supersede(
    w: World, memory_id: str, text: str, *, edit: bool = False, context: str | None = None
) -> None:
    version = w.chains[memory_id] + 1
    cls = MemoryEdited if edit else MemorySuperseded
    extra = {} if edit else {"similarity": 0.93}
    w.append(
        cls(
            memory_id=memory_id,
            version_id=f"{memory_id}-v{version}",
            version=version,
            supersedes_version_id=f"{memory_id}-v{version - 1}",
            container_tag="c1",
            content=w.seal(memory_id, text),  # type: ignore[arg-type]
            context=None if context is None else w.seal(memory_id, context),  # type: ignore[arg-type]
            **extra,  # type: ignore[arg-type]
        )
    )
    w.chains[memory_id] = version


def erase(w: World, memory_id: str) -> None:
    """Hard delete: the chain's key destroyed, then the erase event."""
    w.keys.destroy(f"memory:{memory_id}")
    w.append(SubjectErased(subject=f"memory:{memory_id}", scope="memory", memory_id=memory_id))


def assert_live_in_step(w: World) -> None:
    """The live set, once held, is kept in step with every batch applied."""
    assert w.projection.live_rows("c1") == {
        r.row_id for r in w.projection.list_latest(container_tag="c1", limit=100)[0]
    }


def assert_rebuild_equals(w: World, root: Path) -> dict[str, list[tuple[object, ...]]]:
    """A projection rebuilt from the log equals the one kept up to date, row for row; the
    rows of the one kept up to date."""
    incremental = w.projection.dump()
    fresh = MemoryProjection(root / "rebuilt.sqlite3", w.sealer)
    try:
        ProjectionRunner(w.log, [fresh]).catch_up()
        assert fresh.dump() == incremental
        assert fresh.live_rows("c1") == w.projection.live_rows("c1")
        assert fresh.last_seq() == w.log.head().seq
    finally:
        fresh.close()
    return incremental


def test_a_chain_is_a_gapless_timeline(world: World) -> None:
    write(world, "m1", "John prefers dark mode")
    supersede(world, "m1", "John prefers light mode")
    supersede(world, "m1", "John prefers the system theme", edit=True)
    chain = world.projection.chain("m1")
    assert chain is not None
    assert [v.version for v in chain.versions] == [1, 2, 3]
    assert [v.content for v in chain.versions][-1] == "John prefers the system theme"
    first, second, third = chain.versions
    assert first.valid_to == second.valid_from and second.valid_to == third.valid_from
    assert third.valid_to is None
    assert first.valid_from <= second.valid_from <= third.valid_from
    assert [v.kind for v in chain.versions] == [
        "memory.written",
        "memory.superseded",
        "memory.edited",
    ]
    assert all((v.agent_id, v.protocol) == ("agent-1", "rest") for v in chain.versions)
    latest = world.projection.latest("m1")
    assert latest is not None and latest.version == 3


def test_exact_duplicates_are_found_among_live_latest_versions(world: World) -> None:
    tea, coffee = content_hash("Ada likes tea"), content_hash("Ada likes coffee")

    def duplicate(container: str) -> object:
        return world.projection.live_duplicates(container, [tea, coffee]).get(tea)

    write(world, "m1", "Ada likes  tea")
    found = world.projection.live_duplicates("c1", [tea, coffee])
    assert list(found) == [tea] and found[tea].memory_id == "m1"
    assert duplicate("c2") is None
    world.append(ChainForgotten(memory_id="m1", reason=world.seal("m1", "wrong")))  # type: ignore[arg-type]
    assert duplicate("c1") is None
    chain = world.projection.chain("m1")
    assert chain is not None and chain.forgotten and chain.forgotten_reason == "wrong"
    world.append(ChainRestored(memory_id="m1"))
    assert duplicate("c1") is not None


def test_erasing_a_memory_leaves_its_text_nowhere_in_the_projection(world: World) -> None:
    write(world, "m1", "canary-31337 lives at 12 Elm Street", context="where? canary-ctx-977")
    write(world, "m2", "kept: the sky is blue")
    world.keys.destroy("memory:m1")
    world.append(SubjectErased(subject="memory:m1", scope="memory", memory_id="m1"))
    chain = world.projection.chain("m1")
    assert chain is not None and chain.erased
    assert [v.content for v in chain.versions] == [None]
    rows, total = world.projection.list_latest(container_tag="c1")
    assert [r.memory_id for r in rows] == ["m2"] and total == 1
    for path in (world.root / "projections").rglob("*"):
        data = path.read_bytes()
        assert b"canary-31337" not in data and b"canary-ctx-977" not in data, path


def test_list_is_newest_first_with_paging(world: World) -> None:
    for i in range(5):
        write(world, f"m{i}", f"fact {i}")
    rows, total = world.projection.list_latest(container_tag="c1", limit=2, offset=1)
    assert total == 5
    assert [r.memory_id for r in rows] == ["m3", "m2"]


def test_the_text_filter_takes_every_word_in_any_order(world: World) -> None:
    write(world, "m1", "Ticket OPS-7 escalated to the on-call team")
    write(world, "m2", "The escalated ticket was closed on 50% of hosts")
    write(world, "m3", "Ticket OPS-9 waits on the migration")

    def found(text: str) -> list[str]:
        rows, _ = world.projection.browse(status="live", container_tag="c1", text=text)
        return sorted(r.memory_id for r in rows)

    assert found("Ticket escalated") == ["m1", "m2"]
    assert found("escalated   TICKET") == ["m1", "m2"]
    assert found("ticket waits") == ["m3"]
    assert found("50%") == ["m2"] and found("5_%") == []  # LIKE's wildcards are text here
    assert found("ticket escalated closed") == ["m2"]


def test_an_erasure_is_in_the_chain_s_history(world: World) -> None:
    write(world, "m1", "Ada's locker code is 7731")
    erase(world, "m1")
    assert [h.kind for h in world.projection.history("m1")] == ["memory.written", "subject.erased"]


@dataclass
class Op:
    kind: str
    target: int
    text: str
    context: str | None


ops = st.lists(
    st.builds(
        Op,
        st.sampled_from(
            ["write", "supersede", "edit", "forget", "restore", "erase", "dedup", "vector"]
        ),
        st.integers(0, 4),
        st.text(min_size=1, max_size=12),
        st.none() | st.text(min_size=1, max_size=12),
    ),
    max_size=25,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops)
def test_incremental_equals_rebuild(ops: list[Op]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for w in _world(Path(tmp)):
            erased: set[str] = set()
            for op in ops:
                memory_id = f"m{op.target}"
                exists = memory_id in w.chains and memory_id not in erased
                if op.kind in ("write", "vector") and memory_id not in w.chains:
                    write(w, memory_id, op.text, vector=op.kind == "vector", context=op.context)
                elif op.kind in ("supersede", "edit") and exists:
                    supersede(w, memory_id, op.text, edit=op.kind == "edit", context=op.context)
                elif op.kind == "forget" and exists:
                    w.append(ChainForgotten(memory_id=memory_id, reason=w.seal(memory_id, op.text)))  # type: ignore[arg-type]
                elif op.kind == "restore" and exists:
                    w.append(ChainRestored(memory_id=memory_id))
                elif op.kind == "dedup" and exists:
                    version = f"{memory_id}-v{w.chains[memory_id]}"
                    w.append(
                        MemoryDeduplicated(
                            memory_id=memory_id, version_id=version, container_tag="c1"
                        )
                    )
                elif op.kind == "erase" and exists:
                    erase(w, memory_id)
                    erased.add(memory_id)
                assert_live_in_step(w)
            incremental = assert_rebuild_equals(w, Path(tmp))
            w.runner.rebuild()
            assert w.projection.dump() == incremental
            for memory_id in erased:
                chain = w.projection.chain(memory_id)
                assert chain is not None
                assert all(v.content is None and v.context is None for v in chain.versions)
            live = [m for m in w.chains if m not in erased]
            for memory_id in live:
                latest = w.projection.latest(memory_id)
                assert latest is not None and latest.version == w.chains[memory_id]
            expected_live = {
                r.row_id for r in w.projection.list_latest(container_tag="c1", limit=100)[0]
            }
            assert w.projection.live_rows("c1") == expected_live


def test_content_hash_ignores_whitespace_only() -> None:
    assert content_hash(" a  b\n") == content_hash("a b")
    assert content_hash("a b") != content_hash("A b")


def test_a_held_live_set_is_kept_in_step_not_dropped(world: World) -> None:
    """Once read, a container's live set follows each applied batch (a new chain joins it, a
    superseded version leaves it) instead of being read from the tables again."""
    write(world, "m1", "Ada keeps bees")
    held = world.projection.live_rows("c1")
    first = set(held)
    write(world, "m2", "Ada sells honey")
    supersede(world, "m1", "Ada keeps wasps")
    now = world.projection.live_rows("c1")
    assert now is held  # the same set, kept in step
    latest = {world.projection.latest(m).row_id for m in ("m1", "m2")}  # type: ignore[union-attr]
    assert set(now) == latest and not first & set(now)


def test_one_append_that_makes_and_changes_chains_keeps_the_live_set_true(world: World) -> None:
    """Chains made and then changed by the same batch (superseded, forgotten) are read back;
    those only made join the held set as they are. The batch comes straight from the append,
    as the write path hands it to the runner."""
    write(world, "m1", "Ada keeps bees")
    held = world.projection.live_rows("c1")
    events = [
        _made(world, "m2", "Ada sells honey"),
        MemorySuperseded(
            memory_id="m2",
            version_id="m2-v2",
            version=2,
            supersedes_version_id="m2-v1",
            container_tag="c1",
            content=world.seal("m2", "Ada sells wax"),  # type: ignore[arg-type]
            similarity=0.9,
        ),
        _made(world, "m3", "Ada walks to the hives"),
        ChainForgotten(memory_id="m3", reason=world.seal("m3", "wrong")),  # type: ignore[arg-type]
        _made(world, "m4", "Ada names her queen"),
    ]
    appended = world.log.append([Draft(ACTOR, e) for e in events])  # type: ignore[arg-type]
    world.runner.sync_to(appended.seqs[-1], appended.records)
    assert world.projection.live_rows("c1") is held
    assert_live_in_step(world)
    assert {world.projection.by_row_ids([r])[r].memory_id for r in held} == {"m1", "m2", "m4"}
    assert_rebuild_equals(world, world.root)


def test_records_handed_over_are_applied_only_when_they_are_exactly_what_is_missing(
    world: World,
) -> None:
    reads: list[int] = []

    class CountingLog:
        def read(self, from_seq: int = 1, limit: int | None = None) -> Iterator[StoredRecord]:
            reads.append(from_seq)
            return world.log.read(from_seq, limit)

    runner = ProjectionRunner(CountingLog(), [world.projection])  # type: ignore[arg-type]
    first = world.log.append([Draft(ACTOR, _made(world, "m1"))])
    runner.sync_to(first.seqs[-1], first.records)
    assert reads == []  # folded as handed over
    second = world.log.append([Draft(ACTOR, _made(world, "m2"))])
    third = world.log.append([Draft(ACTOR, _made(world, "m3"))])
    runner.sync_to(third.seqs[-1], third.records)  # the second append is missing from it
    assert reads == [second.seqs[0]]
    assert world.projection.last_seq() == third.seqs[-1]
    # Appends handed over together with another writer's record between them (the groups of
    # one write), that writer having applied everything up to the gap: what lies past the gap
    # is still folded, never skipped.
    ours = [world.log.append([Draft(ACTOR, _made(world, m))]) for m in ("m4", "m5")]
    theirs = world.log.append([Draft(ACTOR, _made(world, "m6"))])
    runner.sync_to(theirs.seqs[-1])
    ours.append(world.log.append([Draft(ACTOR, _made(world, "m7"))]))
    runner.sync_to(ours[-1].seqs[-1], [r for a in ours for r in a.records])
    assert world.projection.last_seq() == ours[-1].seqs[-1]
    latest = world.projection.list_latest(container_tag="c1", limit=9)[0]
    assert {r.memory_id for r in latest} == {f"m{n}" for n in range(1, 8)}
    assert_rebuild_equals(world, world.root)


def _made(world: World, memory_id: str, text: str = "a fact") -> MemoryWritten:
    return MemoryWritten(
        memory_id=memory_id,
        version_id=f"{memory_id}-v1",
        container_tag="c1",
        content=world.seal(memory_id, f"{text} ({memory_id})"),  # type: ignore[arg-type]
    )


def test_stored_vectors_are_read_a_chunk_at_a_time_across_both_formats(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The boot fill's matrix: every row in row order, float32 rows written before float16
    ones decoded alike, whatever chunks the read is split into."""
    from mnemolog.embedding.port import embed_bytes, from_bytes
    from mnemolog.projections.memories import queries

    for n in range(5):
        write(world, f"old-{n}", f"an older fact {n}", vector=True)  # float32, as before
    for n in range(4):
        v = np.random.default_rng(100 + n).standard_normal(8).astype(np.float32)
        sealed = world.sealer.seal(f"memory:new-{n}", embed_bytes(v))
        world.append(
            MemoryWritten(
                memory_id=f"new-{n}",
                version_id=f"new-{n}-v1",
                container_tag="c1",
                content=world.seal(f"new-{n}", f"a newer fact {n}"),  # type: ignore[arg-type]
                embedding=sealed,
            )
        )
    write(world, "plain", "a fact without a vector")
    whole = world.projection.vectors_through(10**9)
    assert whole is not None and whole.labels.tolist() == sorted(whole.labels.tolist())
    stored = dict(world.projection.vectors_of(whole.labels.tolist()))
    expected = np.stack([from_bytes(stored[label]) for label in whole.labels.tolist()])
    assert len(whole.labels) == 9 and np.array_equal(whole.data, expected)
    for chunk in (1, 2, 4):
        monkeypatch.setattr(queries, "VECTOR_CHUNK", chunk)
        again = world.projection.vectors_through(10**9)
        assert again is not None
        assert np.array_equal(again.labels, whole.labels) and np.array_equal(again.data, expected)
    # Through an earlier seq: only the rows written by then.
    first_five = world.projection.vectors_through(int(whole.labels[4]))
    assert first_five is not None and np.array_equal(first_five.data, expected[:5])


def test_the_versions_a_page_names_are_read_in_one_batch(world: World) -> None:
    write(world, "m1", "Alice lives in Porto")
    supersede(world, "m1", "Alice lives in Lisbon")
    write(world, "m2", "Bob keeps bees")
    erase(world, "m2")
    latest = world.projection.latest_of(["m1", "m2", "m1", "nosuch"])
    assert {k: (v.version, v.content, v.erased) for k, v in latest.items()} == {
        "m1": (2, "Alice lives in Lisbon", False),
        "m2": (1, None, True),
    }
    numbered = world.projection.by_numbers([("m1", 1), ("m1", 2), ("m1", 3), ("m2", 1)])
    assert {k: v.content for k, v in numbered.items()} == {
        ("m1", 1): "Alice lives in Porto",
        ("m1", 2): "Alice lives in Lisbon",
        ("m2", 1): None,
    }
    assert world.projection.latest_of([]) == {} and world.projection.by_numbers([]) == {}
