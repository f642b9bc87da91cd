"""``mnemolog review-supersedes`` over a store holding what the earlier rule made: it lists the
supersedes that hid another thing's fact, and only those."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mnemolog.cli import main
from mnemolog.eventlog import Actor, Draft
from mnemolog.eventlog.events import Evidence, MemorySuperseded
from mnemolog.eventlog.subjects import memory_subject
from mnemolog.memory import NewMemory
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

ACTOR = Actor(agent_id="agent-review", protocol="rest")


def supersede(
    runtime: Runtime, tag: str, memory_id: str, text: str, evidence: Evidence | None
) -> None:
    """A ``memory.superseded`` as an earlier build wrote it (no evidence), or a named one."""
    latest = runtime.core.memories.latest(memory_id)
    assert latest is not None
    event = MemorySuperseded(
        memory_id=memory_id,
        version_id=f"ver_{memory_id}_{latest.version + 1}",
        version=latest.version + 1,
        supersedes_version_id=latest.version_id,
        container_tag=tag,
        content=runtime.sealer.seal_text(memory_subject(memory_id), text),
        similarity=0.93,
        evidence=evidence,
    )
    runtime.core.record([Draft(ACTOR, event)])


def test_the_supersedes_that_hid_another_fact_are_listed(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    runtime = Runtime(Settings(data_dir=data_dir, embedder="fast"))
    try:
        write = runtime.core.writes.write
        alpha, mode, keys, gone = (
            o.memory_id
            for o in write(
                "t",
                [
                    NewMemory(content="The alpha service listens on port 5432."),
                    NewMemory(content="John prefers dark mode."),
                    NewMemory(content="The spare keys are in the drawer."),
                    NewMemory(content="Room 101 is the server room."),
                ],
                ACTOR,
            )
        )
        supersede(runtime, "t", alpha, "The beta service listens on port 5432.", None)
        # A new value: today linked beside the older text, both kept, not superseded.
        supersede(runtime, "t", mode, "John prefers light mode.", None)
        named = Evidence(rule="explicit", reason="named")
        supersede(runtime, "t", keys, "Ask Sam for the keys.", named)  # asked for
        supersede(runtime, "t", gone, "Room 102 is the server room.", None)
        runtime.core.chains.erase(gone, ACTOR)  # nothing left to judge
    finally:
        runtime.close()

    result = CliRunner().invoke(main, ["review-supersedes", "--data-dir", str(data_dir), "--json"])
    assert result.exit_code == 0, result.output
    review = json.loads(result.output)
    assert (review["automatic"], review["unreadable"]) == (3, 1)
    findings = {f["memory_id"]: f for f in review["findings"]}
    assert set(findings) == {alpha, mode}
    finding = findings[alpha]
    assert finding["version"] == 2
    assert finding["older"] == "The alpha service listens on port 5432."
    assert (finding["verdict"], finding["reason"]) == ("distinct", "other_subject")
    assert (findings[mode]["verdict"], findings[mode]["reason"]) == ("possible", "new_value")

    text = CliRunner().invoke(main, ["review-supersedes", "--data-dir", str(data_dir)])
    assert "hid:  The alpha service listens on port 5432." in text.output
    assert "2 of 3 automatic supersedes would not be made today" in text.output
    other = CliRunner().invoke(
        main, ["review-supersedes", "--data-dir", str(data_dir), "--container", "x"]
    )
    assert "0 of 0 automatic supersedes" in other.output


def test_apply_splits_each_hidden_version_once_and_the_dry_run_changes_nothing(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    runtime = Runtime(Settings(data_dir=data_dir, embedder="fast"))
    try:
        (alpha,) = (
            o.memory_id
            for o in runtime.core.writes.write(
                "t", [NewMemory(content="The alpha service listens on port 5432.")], ACTOR
            )
        )
        supersede(runtime, "t", alpha, "The beta service listens on port 5432.", None)
        head = runtime.log.head().seq
    finally:
        runtime.close()

    dry = CliRunner().invoke(main, ["review-supersedes", "--data-dir", str(data_dir)])
    assert dry.exit_code == 0 and "1 not split yet" in dry.output
    applied = CliRunner().invoke(
        main, ["review-supersedes", "--data-dir", str(data_dir), "--apply"]
    )
    assert applied.exit_code == 0, applied.output
    assert "1 versions split" in applied.output

    runtime = Runtime(Settings(data_dir=data_dir, embedder="fast"))
    try:
        assert runtime.log.head().seq == head + 1
        (split,) = runtime.core.memories.split_into(alpha)
        chain = runtime.core.memories.chain(split.memory_id)
        assert chain is not None
        assert [v.content for v in chain.versions] == ["The alpha service listens on port 5432."]
    finally:
        runtime.close()
    again = CliRunner().invoke(
        main, ["review-supersedes", "--data-dir", str(data_dir), "--apply", "--json"]
    )
    assert again.exit_code == 0, again.output
    listed = json.loads(again.output.splitlines()[0])
    assert listed["findings"][0]["split_into"] == split.memory_id
    assert "0 versions split" in again.output
