"""Concurrent writes to one container share a decision batch, and each gets its own answer."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from mnemolog.errors import InvalidInput, MnemologError
from mnemolog.eventlog import Actor
from mnemolog.memory import NewMemory, WriteOutcome
from mnemolog.memory.writing.combiner import BatchWriter, Submitted, WriteCombiner
from mnemolog.memory.writing.keyed import KeySpan, WriteKey
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

ACTOR = Actor(agent_id="agent-combined", protocol="rest")
PETS = ["cat", "parrot", "tortoise", "ferret", "goldfish", "hamster", "iguana", "rabbit"]


class Held:
    """A ``BatchWriter`` whose first call waits until ``release`` is set: the others queue."""

    def __init__(self, inner: BatchWriter) -> None:
        self.inner = inner
        self.calls: list[int] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def write(
        self,
        container_tag: str,
        items: Sequence[NewMemory],
        actor: Actor,
        key: WriteKey | None = None,
    ) -> list[WriteOutcome]:
        return self.inner.write(container_tag, items, actor, key)

    def submit_groups(
        self,
        groups: Sequence[tuple[str, Sequence[NewMemory]]],
        actor: Actor,
        keys: Sequence[Sequence[KeySpan]] | None = None,
    ) -> Submitted:
        self.calls.append(sum(len(items) for _, items in groups))
        if len(self.calls) == 1:
            self.entered.set()
            assert self.release.wait(30)
        return self.inner.submit_groups(groups, actor, keys)


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    opened = Runtime(Settings(data_dir=tmp_path / "data", embedder="quality"))
    yield opened
    opened.close()


def run_all(
    work: list[tuple[str, list[str]]],
    combiner: WriteCombiner,
    held: Held,
    keys: Sequence[WriteKey | None] = (),
) -> list[object]:
    """Each (container, texts) written by its own thread (with its key of ``keys``, if any);
    the first holds the rest back."""
    results: list[object] = [None] * len(work)

    def one(n: int) -> None:
        tag, texts = work[n]
        key = keys[n] if keys else None
        try:
            results[n] = combiner.write(tag, [NewMemory(content=t) for t in texts], ACTOR, key)
        except MnemologError as exc:
            results[n] = exc

    threads = [threading.Thread(target=one, args=(n,)) for n in range(len(work))]
    threads[0].start()
    assert held.entered.wait(30)
    for thread in threads[1:]:
        thread.start()
    while sum(len(q) for q in combiner._waiting.values()) < len(work) - 1:
        threading.Event().wait(0.001)  # until every other request waits behind the first
    held.release.set()
    for thread in threads:
        thread.join()
    return results


def test_waiting_writes_share_one_batch_and_get_their_own_outcomes(runtime: Runtime) -> None:
    held = Held(runtime.core.writes)
    combiner = WriteCombiner(held)
    texts = [[f"Lou's neighbour keeps a {pet} named Pip {n}"] for n, pet in enumerate(PETS)]
    texts.append(["Lou's neighbour keeps a cat named Pip 0"])  # the same as the first, exactly
    results = run_all([("lou", t) for t in texts], combiner, held)
    assert held.calls == [1, len(texts) - 1]  # the first alone, then all the others at once
    outcomes = [r[0] for r in results if isinstance(r, list)]
    assert len(outcomes) == len(texts)
    memories = runtime.core.memories
    for (text,), outcome in zip(texts[:-1], outcomes[:-1], strict=True):
        latest = memories.latest(outcome.memory_id)
        assert outcome.status == "created" and latest is not None and latest.content == text
    assert len({o.memory_id for o in outcomes[:-1]}) == len(PETS)
    assert outcomes[-1].status == "deduplicated"
    assert outcomes[-1].memory_id == outcomes[0].memory_id


class Refusing:
    """Refuses any batch holding the text ``bad``, like the write decision refusing bad input."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def write(
        self,
        container_tag: str,
        items: Sequence[NewMemory],
        actor: Actor,
        key: WriteKey | None = None,
    ) -> list[WriteOutcome]:
        (result,) = self.submit_groups([(container_tag, items)], actor).finish()
        if isinstance(result, Exception):
            raise result
        return result

    def submit_groups(
        self,
        groups: Sequence[tuple[str, Sequence[NewMemory]]],
        actor: Actor,
        keys: Sequence[Sequence[KeySpan]] | None = None,
    ) -> Done:
        out: list[list[WriteOutcome] | Exception] = []
        for tag, items in groups:
            self.calls.append([f"{tag}:{i.content}" for i in items])
            if any(i.content == "bad" for i in items):
                out.append(InvalidInput("bad text"))
                continue
            out.append(
                [
                    WriteOutcome(
                        memory_id=f"mem_{i.content}", version_id="v", version=1, status="created"
                    )
                    for i in items
                ]
            )
        return Done(out)


class Done:
    """Writes already complete: ``finish`` only hands back their results."""

    def __init__(self, results: list[list[WriteOutcome] | Exception]) -> None:
        self.results = results

    def finish(self) -> list[list[WriteOutcome] | Exception]:
        return self.results


def test_a_refused_request_fails_alone() -> None:
    refusing = Refusing()
    held = Held(refusing)
    combiner = WriteCombiner(held)
    results = run_all(
        [("c", ["first"]), ("c", ["a", "b"]), ("c", ["bad"]), ("d", ["y"]), ("c", ["z"])],
        combiner,
        held,
    )
    assert [o.memory_id for o in results[0]] == ["mem_first"]  # type: ignore[union-attr]
    assert [o.memory_id for o in results[1]] == ["mem_a", "mem_b"]  # type: ignore[union-attr]
    assert isinstance(results[2], InvalidInput)
    assert [o.memory_id for o in results[3]] == ["mem_y"]  # type: ignore[union-attr]
    assert [o.memory_id for o in results[4]] == ["mem_z"]  # type: ignore[union-attr]
    # One call for both containers; the refused container's requests then each alone.
    assert refusing.calls[1:3] == [["c:a", "c:b", "c:bad", "c:z"], ["d:y"]]
    assert refusing.calls[3:] == [["c:a", "c:b"], ["c:bad"], ["c:z"]]


def test_writes_to_several_containers_land_each_in_its_own(runtime: Runtime) -> None:
    held = Held(runtime.core.writes)
    combiner = WriteCombiner(held)
    work = [(f"box{n % 3}", [f"Box {n % 3} holds a {pet} figurine"]) for n, pet in enumerate(PETS)]
    results = run_all(work, combiner, held)
    assert held.calls == [1, len(work) - 1]
    for (tag, (text,)), result in zip(work, results, strict=True):
        assert isinstance(result, list)
        latest = runtime.core.memories.latest(result[0].memory_id)
        assert latest is not None and (latest.container_tag, latest.content) == (tag, text)


class Overlapping:
    """The first batch's ``finish`` completes only once a second batch has been submitted."""

    def __init__(self) -> None:
        self.submitted: list[list[str]] = []
        self.second = threading.Event()

    def write(
        self,
        container_tag: str,
        items: Sequence[NewMemory],
        actor: Actor,
        key: WriteKey | None = None,
    ) -> list[WriteOutcome]:
        raise AssertionError("no request is refused here")

    def submit_groups(
        self,
        groups: Sequence[tuple[str, Sequence[NewMemory]]],
        actor: Actor,
        keys: Sequence[Sequence[KeySpan]] | None = None,
    ) -> Submitted:
        self.submitted.append([i.content for _, items in groups for i in items])
        first = len(self.submitted) == 1
        if not first:
            self.second.set()
        results: list[list[WriteOutcome] | Exception] = [
            [
                WriteOutcome(
                    memory_id=f"mem_{i.content}", version_id="v", version=1, status="created"
                )
                for i in items
            ]
            for _, items in groups
        ]
        return Blocking(results, self.second if first else None)


class Blocking(Done):
    def __init__(
        self, results: list[list[WriteOutcome] | Exception], wait_for: threading.Event | None
    ) -> None:
        super().__init__(results)
        self.wait_for = wait_for

    def finish(self) -> list[list[WriteOutcome] | Exception]:
        if self.wait_for is not None:
            assert self.wait_for.wait(30), "the next batch was not submitted meanwhile"
        return self.results


def test_the_next_batch_is_submitted_while_the_first_is_made_durable() -> None:
    overlapping = Overlapping()
    combiner = WriteCombiner(overlapping)
    answers: dict[str, list[WriteOutcome]] = {}

    def one(text: str) -> None:
        answers[text] = combiner.write("c", [NewMemory(content=text)], ACTOR)

    first = threading.Thread(target=one, args=("first",))
    first.start()
    while not overlapping.submitted:  # the first batch is submitted, its finish now waits
        threading.Event().wait(0.001)
    second = threading.Thread(target=one, args=("second",))
    second.start()
    first.join(35)
    second.join(35)
    assert overlapping.submitted == [["first"], ["second"]]
    assert [o.memory_id for o in answers["first"]] == ["mem_first"]
    assert [o.memory_id for o in answers["second"]] == ["mem_second"]


def test_keyed_requests_in_one_batch_each_record_their_answer(runtime: Runtime) -> None:
    """Keyed and unkeyed requests decided together: each keyed one's ``write.keyed`` follows
    its own events in the append, and folds into the answer its request was given."""
    core = runtime.core
    held = Held(core.writes)
    combiner = WriteCombiner(held)
    work = [
        ("kb", ["Kit's boat is called Heron"]),
        ("kb", ["Kit's boat is moored at pier 4", "Kit's boat is called Heron"]),
        ("kb", ["Kit sails on Saturdays"]),
        ("kb", ["Kit's dinghy is orange", "Kit's oar is cracked"]),
    ]
    sealed = runtime.sealer.seal_text("container:kb", "fp")
    keys = [None, WriteKey("d1", sealed), None, WriteKey("d3", sealed)]
    results = run_all(work, combiner, held, keys)
    assert held.calls == [1, 5]  # the three others decided in one batch
    for n, digest in ((1, "d1"), (3, "d3")):
        row = core.memories.keyed_write("kb", ACTOR.agent_id, digest)
        answer = results[n]
        assert row is not None and isinstance(answer, list)
        assert row.seqs() == [o.seq for o in answer]
        assert [(o.memory_id, o.version_id, o.status) for o in row.outcomes] == [
            (o.memory_id, o.version_id, o.status) for o in answer
        ]
    assert [o.status for o in results[1]] == ["created", "deduplicated"]  # type: ignore[union-attr]
    batch = [r.record.kind for r in runtime.log.read()][-7:]
    assert batch == [
        "memory.written",
        "memory.deduplicated",
        "write.keyed",
        "memory.written",
        "memory.written",
        "memory.written",
        "write.keyed",
    ]
