"""The write choke point under concurrency, in process, on a real data dir."""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemolog.eventlog import Actor
from mnemolog.eventlog.events import MemoryLinked
from mnemolog.memory import NewMemory
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings
from mnemolog.texts import content_hash

from ..projections.test_vector_graph_probe import CountedGraph

ACTOR = Actor(agent_id="agent-test", protocol="rest")
FACTS = [
    "Kim's favourite fruit is {}",
    "Kim keeps a pet {}",
    "The meeting with Lou is on {}",
    "Kim's car is painted {}",
]
VALUES = ["mango", "lizard", "Tuesday", "blue", "kiwi", "parrot", "Friday", "green"]


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    opened = Runtime(Settings(data_dir=tmp_path / "data", embedder="quality"))
    yield opened
    opened.close()


def test_concurrent_writers_to_one_container_keep_chains_whole(runtime: Runtime) -> None:
    errors: list[BaseException] = []

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(15):
                text = rng.choice(FACTS).format(rng.choice(VALUES))
                runtime.core.writes.write("one", [NewMemory(content=text)], ACTOR)
        except BaseException as exc:  # reported below: a thread must not hide a failure
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors

    memories = runtime.core.memories
    latest, _ = memories.list_latest(container_tag="one", limit=1000)
    for row in latest:
        chain = memories.chain(row.memory_id)
        assert chain is not None
        assert [v.version for v in chain.versions] == list(range(1, len(chain.versions) + 1))
        assert [v.valid_to is None for v in chain.versions].count(True) == 1
    hashes = Counter(content_hash(r.content or "") for r in latest)
    assert max(hashes.values()) == 1, "two live memories hold the same text"

    stats = runtime.log.writer_stats
    # 120 writes into one container still shared durable commits.
    assert stats.batches < stats.requests
    before = memories.dump()
    runtime.core.runner.rebuild()
    assert memories.dump() == before


def test_near_duplicate_supersedes_only_a_restatement(runtime: Runtime) -> None:
    """A close text supersedes only when it keeps every word of the older one; a new value
    is linked beside it."""
    write = runtime.core.writes.write
    (first,) = write("facts", [NewMemory(content="John prefers dark mode")], ACTOR)
    (fixed,) = write("facts", [NewMemory(content="John prefers light mode")], ACTOR)
    assert (fixed.status, fixed.possibly_updates) == ("created", first.memory_id)
    (detail,) = write("facts", [NewMemory(content="John prefers light mode in the evening")], ACTOR)
    assert (detail.status, detail.memory_id, detail.version) == ("superseded", fixed.memory_id, 2)

    # Close in embedding space (cosine about 0.88 with the quality tier), but another remark
    # by another speaker: two memories, apart or in one batch.
    remark = "John: Wow, Maria! I see, so that's the key to making a difference."
    reply = "Maria: Yeah, John! That's so important."
    for tag, batches in (("apart", [[remark], [reply]]), ("batch", [[remark, reply]])):
        outcomes = [
            o for texts in batches for o in write(tag, [NewMemory(content=t) for t in texts], ACTOR)
        ]
        assert [o.status for o in outcomes] == ["created", "created"], tag


def test_a_link_keeps_only_the_written_memorys_own_words(runtime: Runtime) -> None:
    """A link joins two chains, each erasable alone: its evidence, sealed under the written
    memory's key, must not hold the other memory's words, which would outlive its erasure."""
    write = runtime.core.writes.write
    (tea,) = write("link-words", [NewMemory(content="Zed prefers oolong")], ACTOR)
    (coffee,) = write("link-words", [NewMemory(content="Zed prefers espresso")], ACTOR)
    assert coffee.possibly_updates == tea.memory_id
    (linked,) = [
        s.record.event for s in runtime.log.read() if isinstance(s.record.event, MemoryLinked)
    ]
    assert linked.evidence.differing is not None
    words = json.loads(runtime.sealer.open(linked.evidence.differing) or b"{}")
    assert words == {"added": ["espresso"]}


def test_in_a_container_that_is_most_of_the_index_a_restatement_is_found_through_the_graph(
    tmp_path: Path,
) -> None:
    """Past 2,000 live versions holding most of the index, a write's neighbours come from the
    vector graph (not a scan of the container), and the decision is the one a scan gives."""
    opened = Runtime(Settings(data_dir=tmp_path / "data", embedder="fast"))
    try:
        write = opened.core.writes.write
        (first,) = write("big", [NewMemory(content="John prefers light mode")], ACTOR)
        rng = random.Random(7)
        things = ["lamp", "kettle", "ladder", "drill", "tent", "kayak", "violin", "easel"]
        for start in range(0, 2_500, 500):
            facts = [
                f"Shelf {n} in aisle {rng.randrange(40)} holds a {rng.choice(things)} "
                f"bought in {1990 + n % 30}"
                for n in range(start, start + 500)
            ]
            write("big", [NewMemory(content=text) for text in facts], ACTOR)
        index = opened.core.vectors.index
        graph = CountedGraph(index._hnsw)
        index._hnsw = graph  # type: ignore[assignment]
        (detail,) = write("big", [NewMemory(content="John prefers light mode at night")], ACTOR)
        assert graph.searches == 1
        assert (detail.status, detail.memory_id, detail.version) == (
            "superseded",
            first.memory_id,
            2,
        )
    finally:
        opened.close()
