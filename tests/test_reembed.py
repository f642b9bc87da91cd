"""``mnemolog reembed``: a data dir moved to another embedder by replaying its log.

A store re-embedded must answer every search as a store built on the new embedder from its
first write does, and keep doing so after a rebuild; an interrupted re-embedding must refuse
to serve until it is resumed, and resume where it stopped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mnemolog.cli import main
from mnemolog.embedding import Embedder, open_embedder, tier_identity
from mnemolog.errors import EmbedderError, EmbedderMismatch, InvalidInput
from mnemolog.eventlog import Actor
from mnemolog.eventlog.events import ReembedCompleted, ReembedStarted, VectorsReembedded
from mnemolog.memory import NewMemory, RecallRequest
from mnemolog.memory.lifecycle import reembedding
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

ACTOR = Actor(agent_id="local", protocol="rest")
FACTS = [
    "Caroline moved to Lisbon in March to start a job at the aquarium.",
    "Melanie paints landscapes on weekends and sells them at the market.",
    "The deploy key for the staging cluster rotates every ninety days.",
    "Tom speaks Spanish and is learning Japanese for his trip.",
    "Our team standup moved from 9:30 to 10:00 because of the new timezone.",
    "Jon's daughter plays the violin in the school orchestra.",
    "The dentist appointment is on Thursday at four in the afternoon.",
    "Priya prefers tea over coffee and never drinks it with sugar.",
    "The Raspberry Pi in the garage runs the home weather station.",
    "Nadia adopted a beagle named Rex from the shelter last spring.",
]
QUERIES = [
    "where does Caroline work",
    "what does Melanie do on weekends",
    "when is the standup",
    "which languages does Tom speak",
    "what pet does Nadia have",
    "how often do keys rotate",
    "weather station",
]
DOCUMENT = (
    "Runbook. When the staging cluster fails over, page the on-call engineer, then check the "
    "replica lag dashboard before promoting the standby. " * 12
)


def settings(data_dir: Path, tier: str) -> Settings:
    return Settings(data_dir=data_dir, embedder=tier)


def fill(runtime: Runtime) -> None:
    """The same history in any store: writes, a correction, a forget, an erase, a document."""
    core = runtime.core
    outcomes = core.writes.write("c1", [NewMemory(content=text) for text in FACTS], ACTOR)
    ids = [o.memory_id for o in outcomes]
    core.writes.write(
        "c1",
        [NewMemory(content="Priya switched to coffee, black, no sugar.", supersedes=ids[7])],
        ACTOR,
    )
    core.chains.forget(ids[6], "moved", ACTOR)
    core.chains.erase(ids[8], ACTOR)
    core.ingest.ingest_document("c1", DOCUMENT, ACTOR, title="runbook")


def answers(runtime: Runtime) -> list[list[tuple[str, float]]]:
    """Every query's served texts in order, with their similarities (ids differ by store)."""
    out = []
    for query in QUERIES:
        for mode in ("memories", "hybrid"):
            result = runtime.core.recall.search(
                RecallRequest(q=query, container_tag="c1", mode=mode),  # type: ignore[arg-type]
                origin="rest",
                actor=ACTOR,
            )
            out.append(
                [
                    (
                        hit.row.content if hit.row is not None else hit.chunk.text,  # type: ignore[union-attr]
                        round(hit.similarity, 5),
                    )
                    for hit in result.hits
                ]
            )
    return out


def built(data_dir: Path, tier: str) -> list[list[tuple[str, float]]]:
    runtime = Runtime(settings(data_dir, tier))
    try:
        fill(runtime)
        return answers(runtime)
    finally:
        runtime.close()


def reopened(data_dir: Path) -> tuple[list[list[tuple[str, float]]], str]:
    runtime = Runtime(settings(data_dir, "auto"))
    try:
        return answers(runtime), runtime.core.embedder.identity.name
    finally:
        runtime.close()


@pytest.fixture(scope="module")
def fresh_fast(tmp_path_factory: pytest.TempPathFactory) -> list[list[tuple[str, float]]]:
    """The store built on the fast tier from its first write."""
    return built(tmp_path_factory.mktemp("fresh-fast"), "fast")


@pytest.fixture(scope="module")
def fresh_quality(tmp_path_factory: pytest.TempPathFactory) -> list[list[tuple[str, float]]]:
    """The store built on the quality tier from its first write."""
    return built(tmp_path_factory.mktemp("fresh-quality"), "quality")


def test_reembedded_store_answers_as_one_built_on_the_new_model(
    tmp_path: Path, fresh_fast: list[list[tuple[str, float]]]
) -> None:
    store = tmp_path / "moved"
    on_quality = built(store, "quality")
    assert on_quality != fresh_fast  # two embedders: the answers differ before the move
    done = CliRunner().invoke(main, ["reembed", "--embedder", "fast", "--data-dir", str(store)])
    assert done.exit_code == 0, done.output
    assert "re-embedded 10 versions and 1 documents" in done.output
    after, name = reopened(store)
    assert name == tier_identity("fast").name
    assert after == fresh_fast
    # The projections are a fold of the log: a rebuild gives the same answers again.
    rebuilt = CliRunner().invoke(main, ["rebuild", "--data-dir", str(store)])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert reopened(store)[0] == fresh_fast
    # Nothing left to do: said so, nothing appended.
    again = CliRunner().invoke(main, ["reembed", "--embedder", "fast", "--data-dir", str(store)])
    assert again.exit_code != 0 and "nothing to do" in again.output
    # Every search recorded, before the move (on e5) and after it (on the fast tier), is
    # re-derived exactly: each with the embedder the data dir had when it ran.
    checked = CliRunner().invoke(
        main, ["replay", "--check-traces", "--json", "--data-dir", str(store)]
    )
    assert checked.exit_code == 0, checked.output
    report = json.loads(checked.output)
    assert report["checked"] == report["exact"] == 3 * 2 * len(QUERIES)


class _Failing:
    """An embedder failing after ``good`` calls: an interrupted re-embedding."""

    def __init__(self, inner: Embedder, good: int) -> None:
        self.inner, self.good = inner, good
        self.identity = inner.identity

    def embed(self, texts: list[str]) -> object:
        if self.good == 0:
            raise EmbedderError("interrupted")
        self.good -= 1
        return self.inner.embed(texts)

    def embed_queries(self, texts: list[str]) -> object:
        return self.inner.embed_queries(texts)


def test_an_interrupted_reembed_refuses_to_serve_then_resumes(
    tmp_path: Path, fresh_quality: list[list[tuple[str, float]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "interrupted"
    on_fast = built(store, "fast")
    assert reopened(store) == (on_fast, tier_identity("fast").name)

    monkeypatch.setattr(reembedding, "BATCH", 4)
    quality = open_embedder("quality", Settings().model_cache, threads=1)
    runtime = Runtime(settings(store, "auto"))
    log, sealer = runtime.log, runtime.sealer
    with pytest.raises(EmbedderError, match="interrupted"):
        reembedding.reembed(log, sealer, _Failing(quality, 1), ACTOR)  # type: ignore[arg-type]
    runtime.close()
    with pytest.raises(EmbedderMismatch, match=r"has not finished.*mnemolog reembed"):
        Runtime(settings(store, "auto"))

    args = ["reembed", "--embedder", "quality", "--data-dir", str(store)]
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    assert "resumed (4 done before)" in done.output  # the one batch of 4 made before
    after, name = reopened(store)
    assert name == tier_identity("quality").name and after == fresh_quality

    runtime = Runtime(settings(store, "auto"))
    try:
        events = [s.record.event for s in runtime.log.read()]
        kinds = [type(e) for e in events if isinstance(e, ReembedStarted | ReembedCompleted)]
        assert kinds == [ReembedStarted, ReembedCompleted]  # one move, resumed, not restarted
        batches = [e for e in events if isinstance(e, VectorsReembedded)]
        covered = [v.seq for b in batches for v in (*b.versions, *b.documents)]
        assert len(covered) == len(set(covered)) == 11  # each text once: 10 versions, 1 doc
        with pytest.raises(InvalidInput, match="nothing to do"):
            reembedding.reembed(runtime.log, runtime.sealer, quality, ACTOR)
    finally:
        runtime.close()


def test_a_running_server_keeps_its_data_dir(tmp_path: Path) -> None:
    store = tmp_path / "busy"
    runtime = Runtime(settings(store, "fast"))
    try:
        done = CliRunner().invoke(
            main, ["reembed", "--embedder", "quality", "--data-dir", str(store)]
        )
        assert done.exit_code == 3 and "stop the server" in done.output
    finally:
        runtime.close()
