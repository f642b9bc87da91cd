"""The learned ranker through the product's own recall, feedback, training and replay, on a
real data dir: a model is trained from uses, promoted, serves, is trained again to the same
digest by a rebuild, and its re-ranked traces replay exactly; exploration is logged and
bounded; feedback of an agent whose trust fell under the floor moves nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemolog.eventlog import Actor, Draft
from mnemolog.eventlog.events import (
    AgentSignal,
    RankerPromoted,
    RankerTrained,
    RecallPerformed,
)
from mnemolog.memory import Caller, NewMemory, RecallRequest
from mnemolog.memory.recall.learned import EXPLORE
from mnemolog.projections.ranker.features import FEATURES
from mnemolog.replay.fidelity import check_traces
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings
from mnemolog.views import trace_json

USER = Actor(agent_id="local", protocol="rest")
HELPER = Caller(agent_id="helper")
QUERY = "what does Sam like to eat for dinner"
# Ten facts that all answer the query about as well as each other, so the order without the
# ranker is the fusion's guess; the agent always uses the same one.
FACTS = [f"Sam likes {food} for dinner on day {i}" for i, food in enumerate(
    ["pasta", "rice", "soup", "tacos", "curry", "salad", "pizza", "ramen", "stew", "fish"]
)]  # fmt: skip


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    opened = Runtime(Settings(data_dir=tmp_path / "data", embedder="fast", ranker_train_every=0))
    yield opened
    opened.close()


def write_facts(runtime: Runtime, container: str = "home") -> dict[str, str]:
    """The facts, written by the user: version id -> text."""
    outcomes = runtime.core.writes.write(container, [NewMemory(content=f) for f in FACTS], USER)
    runtime.core.fulltext.index.commit()
    runtime.core.context_fulltext.index.commit()
    return {o.version_id: f for o, f in zip(outcomes, FACTS, strict=True)}


def recall(runtime: Runtime, caller: Caller, limit: int = 5) -> RecallPerformed:
    result = runtime.core.recall.search(
        RecallRequest(q=QUERY, container_tag="home", limit=limit),
        origin="rest",
        actor=caller.actor("rest"),
    )
    assert result.seq is not None
    (stored,) = runtime.log.read(from_seq=result.seq, limit=1)
    assert isinstance(stored.record.event, RecallPerformed)
    return stored.record.event


def use_always(runtime: Runtime, caller: Caller, chosen: str, times: int) -> None:
    """``times`` recalls, each followed by the agent saying it used ``chosen`` if served."""
    for _ in range(times):
        event = recall(runtime, caller)
        used = [chosen] if chosen in event.served else []
        runtime.core.usage.used(event.recall_id, caller, "rest", version_ids=used)


def test_a_model_learns_from_uses_is_promoted_and_serves(runtime: Runtime) -> None:
    write_facts(runtime)
    before = recall(runtime, HELPER)
    assert "ranker" not in before.params
    chosen = before.served[3]  # fourth without the ranker
    use_always(runtime, HELPER, chosen, 60)

    trained = runtime.core.ranking.train()
    home = next(t for t in trained if t.container_tag == "home")
    assert home.promoted, home.reason
    after = recall(runtime, HELPER)
    assert after.params["ranker"] == home.digest
    assert after.served[0] == chosen or after.params.get("explore") == 1
    # Only the order changed: what is served is what the order without the ranker served.
    assert set(after.served) <= {c.version_id for c in before.candidates}
    assert after.learned is not None
    assert set(after.learned.features) == set(after.served)  # the features of what it served
    assert set(after.served) <= set(after.learned.scores)  # the score of each it reordered
    # A recall before any feedback in its container logs nothing of the stage.
    assert before.learned is None
    events = [r.record.event for r in runtime.log.read(from_seq=before.view_seq or 1)]
    promoted = [e for e in events if isinstance(e, RankerPromoted)]
    assert [p.digest for p in promoted if p.container_tag == "home"] == [home.digest]
    # The trace (``/inspect``, the dashboard's trace page) shows the model and its weights.
    shown = trace_json(runtime.core, runtime.core.reads.trace(after.recall_id, Caller()))
    assert shown["ranker"]["digest"] == home.digest  # type: ignore[index]
    assert shown["ranker"]["weights"]["used_alike"] != 0  # type: ignore[index]
    ranked = [c for c in shown["candidates"] if c["rankerScore"] is not None]  # type: ignore[attr-defined]
    assert len(ranked) == len(FACTS)


def test_a_rebuild_trains_the_same_digest_and_replays_the_trace(runtime: Runtime) -> None:
    write_facts(runtime)
    chosen = recall(runtime, HELPER).served[2]
    use_always(runtime, HELPER, chosen, 60)
    trained = {t.container_tag: t for t in runtime.core.ranking.train()}
    digest = trained["home"].digest
    assert digest is not None and trained["home"].promoted
    ranked = recall(runtime, HELPER)
    assert ranked.params["ranker"] == digest

    runtime.core.runner.rebuild()
    row = runtime.core.ranker.model_row(digest)
    assert row is not None and row.reproduced
    assert row.model.digest == digest
    assert runtime.core.ranker.serving("home") == row.model

    settings = runtime.settings
    report = check_traces(
        runtime.log,
        runtime.sealer,
        runtime.core.embedder,
        settings.data_dir / "scratch-check",
        only=[ranked.recall_id],
    )
    (check,) = report.traces
    assert check.status == "exact", check.reasons


def test_a_changed_log_prefix_does_not_reproduce_the_digest(runtime: Runtime) -> None:
    """A ``ranker.trained`` whose digest its rows do not give is kept out of service."""
    write_facts(runtime)
    chosen = recall(runtime, HELPER).served[1]
    use_always(runtime, HELPER, chosen, 40)
    trained = {t.container_tag: t for t in runtime.core.ranking.train()}
    events = [r.record.event for r in runtime.log.read(from_seq=1)]
    real = next(e for e in events if isinstance(e, RankerTrained) and e.container_tag == "home")
    forged = RankerTrained(
        container_tag="home",
        digest="0" * 64,
        through_seq=real.through_seq,
        split_seq=real.split_seq,
        prior=real.prior,
        standing=real.standing,
        eta=real.eta,
        examples=real.examples,
        pairs=real.pairs,
    )
    runtime.core.record([Draft(USER, forged), Draft(USER, RankerPromoted(
        container_tag="home", digest="0" * 64, replaced=trained["home"].digest
    ))])  # fmt: skip
    row = runtime.core.ranker.model_row("0" * 64)
    assert row is not None and not row.reproduced
    assert runtime.core.ranker.serving("home") != row.model
    assert "ranker" not in recall(runtime, HELPER).params or (
        recall(runtime, HELPER).params["ranker"] != "0" * 64
    )


def test_exploration_is_logged_bounded_and_only_for_agents_that_give_feedback(
    runtime: Runtime,
) -> None:
    write_facts(runtime)
    silent = Caller(agent_id="silent")
    plain = recall(runtime, silent).served
    assert all("explore" not in recall(runtime, silent).params for _ in range(100))

    first = recall(runtime, HELPER)
    runtime.core.usage.used(first.recall_id, HELPER, "rest", version_ids=[])
    recalls = [recall(runtime, HELPER) for _ in range(400)]
    explored = [r for r in recalls if "explore" in r.params]
    # 5% of 400 is 20 (standard deviation 4.4): far outside [5, 45] only if the rate is off.
    assert 5 <= len(explored) <= 45, len(explored)
    assert EXPLORE == 0.05
    for r in recalls:
        k = r.params.get("explore")
        if k is None:
            assert r.served == plain
            continue
        assert isinstance(k, int) and 1 <= k <= 4
        swapped = list(plain)
        swapped[k - 1], swapped[k] = swapped[k], swapped[k - 1]
        assert r.served == swapped


def test_exploration_swaps_only_within_what_is_served_when_fewer_match_than_the_limit(
    runtime: Runtime,
) -> None:
    """A container holding one matching memory, then two: an explored recall never swaps
    past the end of what is served (it once failed with an index error, at random)."""
    runtime.core.writes.write("home", [NewMemory(content=FACTS[0])], USER)
    runtime.core.fulltext.index.commit()
    first = recall(runtime, HELPER)
    assert len(first.served) == 1
    runtime.core.usage.used(first.recall_id, HELPER, "rest", version_ids=[])
    alone = [recall(runtime, HELPER) for _ in range(150)]
    assert all(r.served == first.served and "explore" not in r.params for r in alone)

    runtime.core.writes.write("home", [NewMemory(content=FACTS[1])], USER)
    runtime.core.fulltext.index.commit()
    pairs = [recall(runtime, HELPER) for _ in range(300)]
    plain = next(r.served for r in pairs if "explore" not in r.params)
    assert len(plain) == 2
    explored = [r for r in pairs if "explore" in r.params]
    assert explored, "5% of 300 recalls explore: none did"
    assert all(r.params["explore"] == 1 and r.served == plain[::-1] for r in explored)


def test_a_spamming_agent_under_the_trust_floor_gains_nothing(tmp_path: Path) -> None:
    """The same store twice, the same honest feedback; in one, an agent whose trust fell
    under 0.5 also says, hundreds of times, that its own memories helped. Its memories' share
    of the top five is no higher, and the model learned the same weights."""
    shares = []
    weights = []
    for spam in (False, True):
        settings = Settings(
            data_dir=tmp_path / f"data-{spam}", embedder="fast", ranker_train_every=0
        )
        runtime = Runtime(settings)
        try:
            spammer = Caller(agent_id="spammer")
            own = runtime.core.writes.write(
                "home",
                [NewMemory(content=f"Sam likes burgers for dinner, note {i}") for i in range(5)],
                spammer.actor("rest"),
            )
            write_facts(runtime)
            for _ in range(12):  # the user's word against the spammer: its trust falls
                runtime.core.record(
                    [Draft(USER, AgentSignal(agent_id="spammer", signal="negative"))]
                )
            assert runtime.core.trust.trust_of("spammer") < 0.5
            mine = {o.version_id for o in own}
            chosen = next(v for v in recall(runtime, HELPER).served if v not in mine)
            use_always(runtime, HELPER, chosen, 40)
            if spam:
                for _ in range(200):
                    event = recall(runtime, spammer)
                    runtime.core.usage.used(
                        event.recall_id,
                        spammer,
                        "rest",
                        version_ids=[v for v in event.served if v in mine],
                    )
            trained = {t.container_tag: t for t in runtime.core.ranking.train()}
            digest = trained["home"].digest
            assert digest is not None
            row = runtime.core.ranker.model_row(digest)
            assert row is not None
            weights.append((row.model.weights, row.model.pairs))
            top = [recall(runtime, Caller(agent_id="reader")).served for _ in range(5)]
            shares.append(sum(v in mine for served in top for v in served) / 25)
        finally:
            runtime.close()
    assert shares[1] <= shares[0]
    # The model learned the same weights from the same pairs: the spam made none of them.
    # (Memory ages differ by the milliseconds between the two stores' writes, hence approx.)
    (plain, plain_pairs), (spammed, spammed_pairs) = weights
    assert spammed_pairs == plain_pairs
    assert spammed == pytest.approx(plain, abs=1e-3)


def used_alike(runtime: Runtime, caller: Caller, version: str) -> float:
    """The ``used_alike`` feature a new recall computes for ``version``."""
    event = recall(runtime, caller)
    assert event.learned is not None
    return event.learned.features[version][FEATURES.index("used_alike")]


def test_a_quarantined_agents_feedback_is_removed_with_it(runtime: Runtime) -> None:
    """Its uses stop counting from the next recall on, and come back with its release."""
    write_facts(runtime)
    chosen = recall(runtime, HELPER).served[4]
    use_always(runtime, HELPER, chosen, 10)
    reader = Caller(agent_id="reader")
    counted = used_alike(runtime, reader, chosen)
    runtime.core.quarantine.quarantine("helper", "spam", USER)
    assert used_alike(runtime, reader, chosen) < counted
    runtime.core.quarantine.release("helper", USER)
    assert used_alike(runtime, reader, chosen) == pytest.approx(counted)


def test_an_agent_whose_trust_falls_under_the_floor_stops_counting_at_the_next_recall(
    runtime: Runtime,
) -> None:
    """Standing is kept between recalls, and read again once any trust changes."""
    write_facts(runtime)
    chosen = recall(runtime, HELPER).served[4]
    use_always(runtime, HELPER, chosen, 10)
    reader = Caller(agent_id="reader")
    counted = used_alike(runtime, reader, chosen)
    assert used_alike(runtime, reader, chosen) == pytest.approx(counted)  # read from what is kept
    for _ in range(12):
        runtime.core.record([Draft(USER, AgentSignal(agent_id="helper", signal="negative"))])
    assert runtime.core.trust.trust_of("helper") < 0.5
    assert used_alike(runtime, reader, chosen) < counted
