"""Where agents ask, recall reranks by default: an MCP search with no word about it is reranked
at the agent pool and its trace says so; `rerank: false` is the fast path; without the model
installed it is served unreranked, the trace saying why, instead of being refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mnemolog.embedding import rerank as rerank_module
from mnemolog.embedding.encoders import E5_FOLDER
from mnemolog.eventlog.events import RecallPerformed
from mnemolog.settings import default_model_cache

from .conftest import Served, ok, serve, session

TAG = "agent-rerank"
FACTS = (
    "Noor's dentist is Dr. Osei on Harbour Street.",
    "Noor moved her dentist appointment to Thursday at 4pm.",
    "Noor prefers aisle seats on long flights.",
    "Noor's sister lives in Ghent.",
)


def search(served: Served, **arguments: Any) -> dict[str, Any]:
    async def body(client: Client) -> dict[str, Any]:
        for fact in FACTS:
            await ok(client, "add_memory", content=fact, containerTag=TAG)
        return await ok(
            client, "search_memories", query="when is Noor's dentist", containerTag=TAG, **arguments
        )

    return session(served.mcp_url, body)


def params_of(served: Served, trace_id: str) -> dict[str, Any]:
    """The recorded parameters of a recall, read from the log."""
    served.runtime.core.recall.settle()
    for stored in served.runtime.log.read(from_seq=1, limit=100_000):
        event = stored.record.event
        if isinstance(event, RecallPerformed) and event.recall_id == trace_id:
            return dict(event.params)
    raise AssertionError(f"no recall {trace_id}")


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serve(tmp_path_factory.mktemp("agent-rerank")) as served:
        yield served


def test_an_agents_search_is_reranked_by_default_and_the_trace_says_how(agent: Served) -> None:
    found = search(agent)
    params = params_of(agent, found["traceId"])
    assert params["rerank"] is True
    assert params["rerankPool"] == 10
    assert str(params["reranker"]).startswith("ms-marco-MiniLM-L-12-v2")
    assert "rerankSkipped" not in params
    assert all(hit.get("rerankScore") is not None for hit in found["results"]), found


def test_an_agent_may_ask_for_the_fast_path(agent: Served) -> None:
    found = search(agent, rerank=False)
    params = params_of(agent, found["traceId"])
    assert "rerank" not in params and "rerankSkipped" not in params
    assert all(hit.get("rerankScore") is None for hit in found["results"]), found


def test_off_reranks_only_when_a_search_asks(tmp_path: Path) -> None:
    with serve(tmp_path / "off", agent_rerank="off") as served:
        assert "rerank" not in params_of(served, search(served)["traceId"])
        asked = params_of(served, search(served, rerank=True)["traceId"])
        assert asked["rerank"] is True and asked["rerankPool"] == 30  # the REST pool


def test_without_the_model_an_agents_search_is_served_unreranked_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The package that ships the reranker is not installed, and the model cache has none.
    monkeypatch.setattr(rerank_module, "installed_reranker", lambda: None)
    cache = tmp_path / "no-reranker"
    cache.mkdir()
    (cache / E5_FOLDER).symlink_to(default_model_cache() / E5_FOLDER)
    with serve(tmp_path / "data", model_cache_dir=cache) as served:
        found = search(served)
        assert found["results"], found
        params = params_of(served, found["traceId"])
        assert "rerank" not in params
        assert params["rerankSkipped"] == "reranker_unavailable"
