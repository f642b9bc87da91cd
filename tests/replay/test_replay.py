"""`mnemolog replay` against a scripted history: the state at each instant, a query then, the
changes between two instants, and every recall re-derived exactly."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from mnemolog.cli import main
from mnemolog.clock import iso
from mnemolog.eventlog import Actor
from mnemolog.eventlog.scratch import scratch_root
from mnemolog.memory import NewMemory, RecallRequest
from mnemolog.memory.recall import ranking as ranking_module
from mnemolog.replay import fidelity as fidelity_module
from mnemolog.replay.command import opened, pinned_embedder
from mnemolog.replay.fidelity import check_traces
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

from ..servers import MNEMOLOG

ACTOR = Actor(agent_id="agent-replay", protocol="rest")
FRUIT = "Kim's favourite fruit is mango"
FRUIT_NOW = "Kim's favourite fruit is kiwi, no longer mango"
PET = "Kim keeps a pet lizard called Rex"
MEETING = "The meeting with Lou is on Tuesday at the library"
MEETING_ASKED = "When and where do we see Lou?"
PET_ASKED = "Does Kim have any animals at home?"


@dataclass
class History:
    data_dir: Path
    ids: dict[str, str]
    at: dict[str, str]  # step -> instant just after it (ISO, explicit timezone)


def instant() -> str:
    time.sleep(0.002)  # the log's clock must move past the step just done
    moment = iso(time.time_ns())
    time.sleep(0.002)
    return moment


@pytest.fixture
def history(tmp_path: Path) -> History:
    """Write, supersede, forget, restore and erase at distinct instants, recalling between."""
    data_dir = tmp_path / "data"
    runtime = Runtime(Settings(data_dir=data_dir, embedder="quality"))
    core, recall = runtime.core, runtime.core.recall
    at = {"start": instant()}
    made = core.writes.write(
        "kim",
        [
            NewMemory(content=FRUIT),
            NewMemory(content=PET, context=PET_ASKED),
            NewMemory(content=MEETING, context=MEETING_ASKED),
        ],
        ACTOR,
    )
    core.chains.set_profile("kim", ["Kim is a vet"], ["planning a trip"], ACTOR)
    ids = {"fruit": made[0].memory_id, "pet": made[1].memory_id, "meeting": made[2].memory_id}
    recall.search(
        RecallRequest(q="which fruit does Kim like", container_tag="kim"),
        origin="rest",
        actor=ACTOR,
    )
    at["written"] = instant()
    named = NewMemory(content=FRUIT_NOW, supersedes=ids["fruit"])
    assert core.writes.write("kim", [named], ACTOR)[0].status == "superseded"
    recall.search(
        RecallRequest(q="which fruit does Kim like", container_tag="kim"),
        origin="rest",
        actor=ACTOR,
    )
    at["superseded"] = instant()
    core.chains.forget(ids["meeting"], "the meeting was cancelled", ACTOR)
    recall.search(
        RecallRequest(q="meeting with Lou", container_tag="kim", include_forgotten=True),
        origin="rest",
        actor=ACTOR,
    )
    at["forgotten"] = instant()
    core.chains.restore(ids["meeting"], ACTOR)
    recall.search(
        RecallRequest(q="Lou", container_tag="kim", mode="hybrid", limit=5),
        origin="rest",
        actor=ACTOR,
    )
    at["restored"] = instant()
    core.chains.erase(ids["pet"], ACTOR)
    recall.search(RecallRequest(q="Kim's pet", container_tag="kim"), origin="rest", actor=ACTOR)
    recall.search(
        RecallRequest(q="fruit", container_tag="kim", as_of=None, diversify=True, limit=2),
        origin="rest",
        actor=ACTOR,
    )
    at["erased"] = instant()
    runtime.close()
    return History(data_dir, ids, at)


def replay(history: History, *args: str) -> dict[str, object]:
    result = CliRunner().invoke(
        main, ["replay", "--data-dir", str(history.data_dir), "--json", *args]
    )
    assert result.exit_code == 0, result.output
    out: dict[str, object] = json.loads(result.output)
    return out


def state_at(history: History, step: str) -> dict[str, dict[str, object]]:
    belief = replay(history, "--as-of", history.at[step])
    memories = belief["memories"]
    assert isinstance(memories, list)
    by_name = {memory_id: name for name, memory_id in history.ids.items()}
    return {by_name[m["id"]]: m for m in memories}


def test_as_of_gives_exactly_the_state_at_each_instant(history: History) -> None:
    assert state_at(history, "start") == {}

    written = state_at(history, "written")
    assert {k: (m["version"], m["content"]) for k, m in written.items()} == {
        "fruit": (1, FRUIT),
        "pet": (1, None),  # erased since: its text is gone, also from the past
        "meeting": (1, MEETING),
    }
    assert written["pet"]["erased_later"] is True and written["pet"]["erased"] is False
    assert {k: m["context"] for k, m in written.items()} == {
        "fruit": None,
        "pet": None,  # erased with the text
        "meeting": MEETING_ASKED,
    }
    assert not any(m["forgotten"] for m in written.values())

    superseded = state_at(history, "superseded")
    assert (superseded["fruit"]["version"], superseded["fruit"]["content"]) == (2, FRUIT_NOW)

    forgotten = state_at(history, "forgotten")
    assert forgotten["meeting"]["forgotten"] is True
    assert forgotten["meeting"]["forgotten_reason"] == "the meeting was cancelled"

    restored = state_at(history, "restored")
    assert restored["meeting"]["forgotten"] is False
    assert restored["pet"]["erased"] is False

    erased = state_at(history, "erased")
    assert erased["pet"]["erased"] is True and erased["pet"]["content"] is None
    assert (erased["fruit"]["version"], erased["meeting"]["forgotten"]) == (2, False)

    profiles = replay(history, "--as-of", history.at["written"])["profiles"]
    assert profiles == [
        {
            "container_tag": "kim",
            "static": ["Kim is a vet"],
            "dynamic": ["planning a trip"],
            "updated_at": profiles[0]["updated_at"],  # type: ignore[index]
            "erased_later": False,
        }
    ]


def test_a_query_as_of_an_instant_is_served_from_the_state_then(history: History) -> None:
    def top(step: str) -> tuple[object, object]:
        found = replay(history, "--as-of", history.at[step], "--query", "Kim's favourite fruit")
        results = found["results"]
        assert isinstance(results, list) and results
        return results[0]["id"], results[0]["content"]

    assert top("written") == (history.ids["fruit"], FRUIT)
    assert top("superseded") == (history.ids["fruit"], FRUIT_NOW)


def test_diff_names_every_change_and_the_event_that_made_it(history: History) -> None:
    result = CliRunner().invoke(
        main,
        [
            "replay",
            "--data-dir",
            str(history.data_dir),
            "--json",
            "--diff",
            history.at["written"],
            history.at["erased"],
        ],
    )
    assert result.exit_code == 0, result.output
    changes = json.loads(result.output)
    assert [(c["change"], c["memory_id"], c["version"]) for c in changes] == [
        ("superseded", history.ids["fruit"], 2),
        ("forgotten", history.ids["meeting"], None),
        ("restored", history.ids["meeting"], None),
        ("erased", history.ids["pet"], None),
    ]
    assert all(c["agent_id"] == "agent-replay" and c["seq"] > 0 for c in changes)


def test_every_recall_is_reproduced_exactly_or_named_unverifiable(history: History) -> None:
    report = replay(history, "--check-traces")
    traces = report["traces"]
    assert isinstance(traces, list) and len(traces) == 6
    # The pet existed when the first four recalls ran, and was erased since.
    assert [t["status"] for t in traces] == ["unverifiable"] * 4 + ["exact"] * 2
    assert all("erased" in t["reasons"][0] for t in traces[:4])
    assert report["fidelity"] == 1.0 and report["differs"] == 0
    one = replay(history, "--trace", str(traces[-1]["trace_id"]))
    assert one["checked"] == 1 and one["exact"] == 1


def test_a_changed_ranking_is_caught(history: History, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranking_module, "RRF_K", ranking_module.RRF_K + 7)
    settings = Settings(data_dir=history.data_dir, embedder="quality")
    with opened(settings) as o:
        report = check_traces(
            o.log, o.sealer, pinned_embedder(settings, o.log), scratch_root(history.data_dir)
        )
    assert report.differs == 2 and report.fidelity == 0.0
    assert all("differs in" in " ".join(t.reasons) for t in report.traces if t.status == "differs")


def test_a_trace_of_another_ranking_version_is_unverifiable_not_differing(
    history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A build whose ranking rules changed (and said so) cannot re-derive the traces of the
    # rules before: it names them unverifiable, with the versions, and does not call them
    # differing, which would read as a fault in the log.
    monkeypatch.setattr(ranking_module, "RRF_K", ranking_module.RRF_K + 7)
    monkeypatch.setattr(fidelity_module, "RANKING", ranking_module.RANKING + 1)
    settings = Settings(data_dir=history.data_dir, embedder="quality")
    with opened(settings) as o:
        report = check_traces(
            o.log, o.sealer, pinned_embedder(settings, o.log), scratch_root(history.data_dir)
        )
    assert report.differs == 0 and report.exact == 0 and report.fidelity is None
    later = [t for t in report.traces if not any("erased" in r for r in t.reasons)]
    assert len(later) == 2
    wanted = f"ranked by version {ranking_module.RANKING} of the ranking rules"
    assert all(t.status == "unverifiable" and wanted in t.reasons[0] for t in later)


def test_replay_runs_beside_the_running_server(history: History) -> None:
    runtime = Runtime(Settings(data_dir=history.data_dir, embedder="quality"))
    try:
        runtime.core.writes.write("kim", [NewMemory(content="Kim is learning Welsh")], ACTOR)
        result = subprocess.run(
            [
                MNEMOLOG,
                "replay",
                "--data-dir",
                str(history.data_dir),
                "--json",
                "--as-of",
                iso(time.time_ns()),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        runtime.close()
    assert result.returncode == 0, result.stderr
    contents = [m["content"] for m in json.loads(result.stdout)["memories"]]
    assert "Kim is learning Welsh" in contents and FRUIT_NOW in contents


def test_unknown_trace_and_bad_instants_are_usage_errors(history: History) -> None:
    runner = CliRunner()
    base = ["replay", "--data-dir", str(history.data_dir)]
    assert runner.invoke(main, [*base, "--trace", "trc_nope"]).exit_code == 1
    assert runner.invoke(main, [*base, "--as-of", "2026-07-03T12:00:00"]).exit_code == 2
    assert runner.invoke(main, [*base, "--query", "x"]).exit_code == 2
    assert runner.invoke(main, [*base]).exit_code == 2
    assert runner.invoke(main, [*base, "--as-of", history.at["erased"]]).exit_code == 0
    assert not any(scratch_root(history.data_dir).iterdir())  # scratch folders are removed


def test_erasing_one_container_leaves_every_other_containers_traces_exact(
    tmp_path: Path,
) -> None:
    """A container's recall reads only its own data: after another container is erased, its
    recalls are reproduced exactly, scores included, and only the erased container's are
    unverifiable."""
    from mnemolog.memory.agents import Caller

    data_dir = tmp_path / "data"
    runtime = Runtime(Settings(data_dir=data_dir, embedder="quality"))
    core, recall = runtime.core, runtime.core.recall
    shared_words = [
        "The garden tap leaks near the shed",
        "Repaint the shed door before winter",
        "The tap water tastes of iron",
        "Order seeds for the vegetable garden",
    ]
    for tag in ("erased-one", "kept-one"):
        core.writes.write(
            tag, [NewMemory(content=f"{text} ({tag})") for text in shared_words], ACTOR
        )
    # The erased container is the larger one: its words weighed on every shared statistic.
    core.writes.write(
        "erased-one",
        [NewMemory(content=f"The shed tap and the garden gate, note {n}") for n in range(30)],
        ACTOR,
    )
    for tag in ("erased-one", "kept-one", "kept-one"):
        for query in ("garden tap", "shed door winter"):
            recall.search(RecallRequest(q=query, container_tag=tag), origin="rest", actor=ACTOR)
    core.erasure.container("erased-one", Caller(), force=True)
    recall.search(
        RecallRequest(q="tap water", container_tag="kept-one"), origin="rest", actor=ACTOR
    )
    runtime.close()

    report = replay(History(data_dir, {}, {}), "--check-traces")
    traces = report["traces"]
    assert isinstance(traces, list) and len(traces) == 7
    assert [t["status"] for t in traces] == ["unverifiable"] * 2 + ["exact"] * 5
    assert report["differs"] == 0 and report["fidelity"] == 1.0
