"""Two nodes in one process on one PostgreSQL log, writing into the same containers from
several threads at once: each decides about a container only in its turn, having applied what
the other appended, so the log's check of a decision's condition never refuses one (nothing is
decided again) and each fact written on both nodes is one memory."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemolog.errors import AppendConflict
from mnemolog.eventlog import Actor
from mnemolog.memory import NewMemory
from mnemolog.memory.record import Recorder
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

from ..postgres import run_all

pytestmark = pytest.mark.slow

ACTOR = Actor(agent_id="local", protocol="rest")
THREADS = 4  # per node
WRITES = 24  # per thread


@pytest.fixture
def nodes(tmp_path: Path, log_url: str) -> Iterator[tuple[Runtime, Runtime]]:
    a = Runtime(Settings(data_dir=tmp_path / "a", embedder="fast", log_url=log_url))
    b = Runtime(Settings(data_dir=tmp_path / "b", embedder="fast", log_url=log_url))
    try:
        yield a, b
    finally:
        b.close()
        a.close()


def test_threads_of_two_nodes_in_the_same_containers_are_never_decided_again(
    nodes: tuple[Runtime, Runtime], monkeypatch: pytest.MonkeyPatch
) -> None:
    refused: list[AppendConflict] = []
    catch_up_after = Recorder.catch_up_after

    def counted(self: Recorder, conflict: AppendConflict) -> None:
        refused.append(conflict)
        catch_up_after(self, conflict)

    monkeypatch.setattr(Recorder, "catch_up_after", counted)
    outcomes: list[tuple[str, str, str]] = []  # (fact, memory id, status)
    failures: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(2 * THREADS)

    def writer(runtime: Runtime, name: str) -> None:
        start.wait()
        for n in range(WRITES):
            tag = ("team-a", "team-b")[n % 2]
            # Every other write is a fact every thread of both nodes writes too.
            fact = f"Rule {n} of {tag} holds." if n % 2 == 0 else f"{name} wrote fact {n}."
            try:
                (outcome,) = runtime.core.writes.write(tag, [NewMemory(content=fact)], ACTOR)
            except BaseException as exc:
                failures.append(exc)
                return
            with lock:
                outcomes.append((fact, outcome.memory_id, outcome.status))

    run_all(
        [
            threading.Thread(target=writer, args=(runtime, f"node {n} thread {t}"))
            for n, runtime in enumerate(nodes)
            for t in range(THREADS)
        ]
    )
    assert failures == []
    assert refused == []
    assert len(outcomes) == 2 * THREADS * WRITES
    for fact in {fact for fact, _, _ in outcomes if fact.startswith("Rule")}:
        made = [(memory_id, status) for f, memory_id, status in outcomes if f == fact]
        assert len({memory_id for memory_id, _ in made}) == 1, made
        assert [status for _, status in made].count("created") == 1, made
    kinds = [stored.record.kind for stored in nodes[0].log.read()]
    assert kinds.count("memory.written") == len({m for _, m, s in outcomes if s == "created"})
