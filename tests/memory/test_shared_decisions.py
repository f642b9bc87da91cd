"""Two nodes in one process on one PostgreSQL log, the second one stale (its follower stopped,
so it sees only what it writes and what a refusal makes it apply): each decision it makes on
stale projections is refused by the log and made again on the present, never written as if
the other node's append had not happened."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemolog.errors import ProjectionsLagging, SeqAhead, VersionConflict
from mnemolog.eventlog import Actor
from mnemolog.memory import NewMemory
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

pytestmark = pytest.mark.slow

ACTOR = Actor(agent_id="local", protocol="rest")


@pytest.fixture
def nodes(tmp_path: Path, log_url: str) -> Iterator[tuple[Runtime, Runtime]]:
    a = Runtime(Settings(data_dir=tmp_path / "a", embedder="fast", log_url=log_url))
    b = Runtime(Settings(data_dir=tmp_path / "b", embedder="fast", log_url=log_url))
    try:
        assert b.core._follower is not None
        b.core._follower.close()  # b now lags: it applies only what its own calls make it
        yield a, b
    finally:
        b.close()
        a.close()


def written(runtime: Runtime) -> list[str]:
    kinds = [stored.record.kind for stored in runtime.log.read()]
    return [kind for kind in kinds if kind == "memory.written"]


def test_the_same_fact_written_on_a_stale_node_is_found_there_once_decided_again(
    nodes: tuple[Runtime, Runtime],
) -> None:
    a, b = nodes
    fact = NewMemory(content="The staging database moved to host db-7.")
    (first,) = a.core.writes.write("team", [fact], ACTOR)
    assert b.core.memories.latest(first.memory_id) is None  # b has not seen it
    (again,) = b.core.writes.write("team", [fact], ACTOR)
    assert again.status == "deduplicated" and again.memory_id == first.memory_id
    assert len(written(b)) == 1


def test_a_keyed_write_retried_on_a_stale_node_is_answered_once(
    nodes: tuple[Runtime, Runtime],
) -> None:
    a, b = nodes
    items = [NewMemory(content="Ana's badge number is 4471.")]
    first = a.core.keyed.write("team", items, ACTOR, "retry-1")
    retried = b.core.keyed.write("team", items, ACTOR, "retry-1")
    assert retried.replayed
    assert [o.memory_id for o in retried.outcomes] == [o.memory_id for o in first.outcomes]
    kinds = [stored.record.kind for stored in b.log.read()]
    assert kinds.count("memory.written") == 1 and kinds.count("write.keyed") == 1


def test_an_edit_on_a_stale_node_meets_the_version_another_node_made(
    nodes: tuple[Runtime, Runtime],
) -> None:
    a, b = nodes
    (made,) = b.core.writes.write("team", [NewMemory(content="The deploy window is 14:00.")], ACTOR)
    a.core.see(made.seq)
    a.core.chains.edit(
        made.memory_id, NewMemory(content="The deploy window is 16:00."), ACTOR, expected_version=1
    )
    assert b.core.memories.latest(made.memory_id).version == 1  # type: ignore[union-attr]
    with pytest.raises(VersionConflict):
        b.core.chains.edit(
            made.memory_id,
            NewMemory(content="The deploy window is 15:00."),
            ACTOR,
            expected_version=1,
        )
    latest = b.core.memories.latest(made.memory_id)
    assert (
        latest is not None
        and latest.version == 2
        and latest.content == ("The deploy window is 16:00.")
    )


def test_a_read_waits_for_min_seq_within_its_bound_and_names_the_lag_past_it(
    nodes: tuple[Runtime, Runtime],
) -> None:
    a, b = nodes
    (made,) = a.core.writes.write("team", [NewMemory(content="Bo's desk is 4B.")], ACTOR)
    with pytest.raises(ProjectionsLagging) as lagging:
        b.core._recorder.see(made.seq, timeout=0.0)  # no time to apply anything
    assert lagging.value.min_seq == made.seq and lagging.value.head >= made.seq
    assert lagging.value.applied < made.seq
    assert b.core.memories.latest(made.memory_id) is None
    b.core.see(made.seq)  # within the configured wait: applied here and now
    assert b.core.memories.latest(made.memory_id) is not None
    with pytest.raises(SeqAhead):
        b.core.see(made.seq + 100)
