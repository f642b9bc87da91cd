"""Every trace of the learned stage replays exactly, whatever happened around it: feedback
landing while recalls run on eight threads, a second word on a recall, grades, training and
promotion, a restart, and the windows of kept records overflowing (made small here so that
a short history evicts from both)."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemolog.eventlog import Actor
from mnemolog.eventlog.events import RecallPerformed
from mnemolog.memory import Caller, NewMemory, RecallRequest
from mnemolog.projections.ranker import histories
from mnemolog.replay.fidelity import FidelityReport, check_traces
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

USER = Actor(agent_id="local", protocol="rest")
AGENTS = [Caller(agent_id=name) for name in ("ana", "ben", "cai")]
FOODS = ["pasta", "rice", "soup", "tacos", "curry", "salad", "pizza", "ramen", "stew", "fish"]
FACTS = [f"Sam likes {food} for dinner on day {i}" for i, food in enumerate(FOODS)] + [
    f"Sam walks the dog to the {place} on day {i}"
    for i, place in enumerate(["park", "river", "market", "school", "station", "harbour"])
]
QUESTIONS = [
    "what does Sam like to eat for dinner",
    "where does Sam walk the dog",
    "what did Sam have on day 3",
]

# One step of a history: a recall and what its agent says of it, training, a burst of
# recalls and feedback on eight threads at once, or a restart.
Step = tuple[str, int, int, str]
steps = st.one_of(
    st.tuples(
        st.just("recall"),
        st.integers(0, len(AGENTS) - 1),
        st.integers(0, len(QUESTIONS) - 1),
        st.sampled_from(["none", "used", "used_twice", "grade"]),
    ),
    st.just(("train", 0, 0, "")),
    st.tuples(st.just("burst"), st.integers(0, 1_000), st.just(0), st.just("")),
    st.just(("restart", 0, 0, "")),
)


@contextmanager
def small_windows() -> Iterator[None]:
    """Windows of a few recalls, so a short history evicts from both."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(histories, "WINDOW", 6)
        patch.setattr(histories, "KEPT", 3)
        yield


def opened(data_dir: Path) -> Runtime:
    return Runtime(Settings(data_dir=data_dir, embedder="fast", ranker_train_every=0))


def recall_and_say(runtime: Runtime, caller: Caller, question: str, say: str, seed: int) -> None:
    result = runtime.core.recall.search(
        RecallRequest(q=question, container_tag="home", limit=5),
        origin="rest",
        actor=caller.actor("rest"),
    )
    served = [hit.row.version_id for hit in result.hits if hit.row is not None]
    if not served or say == "none":
        return
    pick = random.Random(seed)
    if say == "grade":
        version = pick.choice(served)
        runtime.core.usage.feedback(
            result.trace_id, caller, "rest", version_id=version, grade=pick.randrange(4)
        )
        return
    runtime.core.usage.used(result.trace_id, caller, "rest", version_ids=[pick.choice(served)])
    if say == "used_twice":  # recorded, not counted: only an agent's first word on a recall
        runtime.core.usage.used(result.trace_id, caller, "rest", version_ids=served[-1:])


def burst(runtime: Runtime, seed: int) -> None:
    """Eight threads, each recalling and saying what it used, at once."""

    def one(n: int) -> None:
        for k in range(3):
            caller = AGENTS[(seed + n) % len(AGENTS)]
            question = QUESTIONS[(seed + n + k) % len(QUESTIONS)]
            recall_and_say(runtime, caller, question, "grade" if n % 3 == 0 else "used", seed + n)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def run_history(data_dir: Path, program: list[Step]) -> FidelityReport:
    runtime = opened(data_dir)
    try:
        runtime.core.writes.write("home", [NewMemory(content=f) for f in FACTS], USER)
        # Enough uses of one memory that a model is trained and promoted early on.
        for _ in range(24):
            recall_and_say(runtime, AGENTS[0], QUESTIONS[0], "used", 0)
        runtime.core.ranking.train()
        for n, (kind, a, b, say) in enumerate(program):
            if kind == "recall":
                recall_and_say(runtime, AGENTS[a], QUESTIONS[b], say, n)
            elif kind == "train":
                runtime.core.ranking.train()
            elif kind == "burst":
                burst(runtime, a)
            else:
                runtime.close()
                runtime = opened(data_dir)
        runtime.core.recall.settle()
        return check_traces(
            runtime.log, runtime.sealer, runtime.core.embedder, data_dir / "scratch-check"
        )
    finally:
        runtime.close()


def learned_traces(data_dir: Path) -> int:
    runtime = opened(data_dir)
    try:
        return sum(
            1
            for stored in runtime.log.read()
            if isinstance(e := stored.record.event, RecallPerformed) and e.learned is not None
        )
    finally:
        runtime.close()


@pytest.mark.slow
@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(program=st.lists(steps, min_size=4, max_size=14))
def test_every_trace_replays_exactly_whatever_ran_beside_it(
    tmp_path_factory: pytest.TempPathFactory, program: list[Step]
) -> None:
    data_dir = tmp_path_factory.mktemp("learned") / "data"
    with small_windows():
        report = run_history(data_dir, program)
    wrong = [(t.seq, t.reasons[:2]) for t in report.traces if t.status != "exact"]
    assert not wrong, wrong
    assert report.unverifiable == 0
    assert learned_traces(data_dir) > 0  # the stage ran: there was something to replay


def test_a_second_word_on_a_recall_counts_no_more_after_a_restart(tmp_path: Path) -> None:
    """Only an agent's first word on a recall counts; a restart reads the records back from
    the projection's tables, and must count the same words the fold did."""
    data_dir = tmp_path / "data"
    program: list[Step] = [
        ("recall", 1, 0, "used_twice"),
        ("recall", 1, 0, "used_twice"),
        ("restart", 0, 0, ""),
        ("recall", 1, 0, "none"),
        ("recall", 2, 0, "none"),
    ]
    report = run_history(data_dir, program)
    wrong = [(t.seq, t.reasons[:2]) for t in report.traces if t.status != "exact"]
    assert not wrong, wrong


def test_traces_replay_exactly_while_writes_land_beside_the_recalls(tmp_path: Path) -> None:
    """A write applied between two of a ranking's reads (its candidates, then their rows and
    links, then trust) would leave the trace matching no position of the log: each recall
    reads one state, and names it."""
    people = ["Ana", "Ben", "Cai", "Dee", "Eli", "Fay"]
    things = ["garden", "violin", "kayak", "novel", "bakery", "chess", "pottery", "hiking"]
    facts = [
        f"{who} spends {day} afternoons on {what} with {other}"
        for n, (who, what) in enumerate((w, t) for w in people for t in things)
        for day, other in [(["Monday", "Friday", "Sunday"][n % 3], people[(n + 1) % 6])]
    ]
    runtime = opened(tmp_path / "data")
    try:
        runtime.core.writes.write("home", [NewMemory(content=f) for f in facts[:16]], USER)

        def write(k: int) -> None:
            for fact in facts[16 + k :: 3]:
                runtime.core.writes.write("home", [NewMemory(content=fact)], USER)

        def ask(k: int) -> None:
            for n in range(12):
                who, what = people[(k + n) % 6], things[(k * 3 + n) % 8]
                recall_and_say(runtime, AGENTS[k % 3], f"what does {who} do {what}", "used", n)

        threads = [threading.Thread(target=write, args=(k,)) for k in range(3)]
        threads += [threading.Thread(target=ask, args=(k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        runtime.core.recall.settle()
        report = check_traces(
            runtime.log, runtime.sealer, runtime.core.embedder, tmp_path / "data" / "scratch"
        )
    finally:
        runtime.close()
    assert report.checked == 48
    wrong = [(t.seq, t.reasons[:2]) for t in report.traces if t.status != "exact"]
    assert not wrong, wrong
