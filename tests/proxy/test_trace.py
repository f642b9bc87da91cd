"""A turn's trace: what /inspect shows, what erasure leaves of it, and that a rebuilt traces
projection holds the same turns as the one kept up to date."""

from __future__ import annotations

from pathlib import Path

import httpx
import openai

from mnemolog.eventlog import Actor
from mnemolog.eventlog.events import ProxyTurn
from mnemolog.projections.traces import TraceProjection

from .conftest import Proxy
from .scripted import Reply


def memory_turn(
    proxy: Proxy,
    tag: str,
    content: str,
    headers: dict[str, str] | None = None,
    extra_body: dict[str, object] | None = None,
) -> tuple[str, str]:
    written = httpx.post(
        f"{proxy.base_url}/memories",
        json={"containerTag": tag, "memories": [{"content": content}]},
    ).json()["memories"][0]
    proxy.upstream.script(
        Reply(content=None, calls=[("searchMemory", {"query": content})]),
        Reply(content="Noted."),
    )
    with openai.OpenAI(
        base_url=proxy.v1,
        api_key="k",
        max_retries=0,
        default_headers={"x-mnemolog-container-tag": tag, **(headers or {})},
    ) as client:
        raw = client.chat.completions.with_raw_response.create(
            model="m",
            messages=[{"role": "user", "content": "What do you know?"}],
            extra_body=extra_body,
        )
    return raw.headers["x-mnemolog-trace-id"], str(written["id"])


def test_inspect_shows_the_whole_turn(proxy: Proxy) -> None:
    turn_id, memory_id = memory_turn(proxy, "u-inspect", "Ada collects vintage maps")
    trace = httpx.get(f"{proxy.base_url}/inspect/{turn_id}").json()
    assert trace["type"] == "turn" and trace["protocol"] == "proxy"
    assert [r["decision"] for r in trace["rounds"]] == ["memory", "answer"]
    assert all(len(r["requestDigest"]) == 64 for r in trace["rounds"])
    (injection,) = trace["injections"]
    assert injection["reproduced"] is True
    (memory,) = injection["memories"]
    assert memory["id"] == memory_id and memory["content"] == "Ada collects vintage maps"
    recall = httpx.get(f"{proxy.base_url}/inspect/{injection['recallId']}").json()
    assert recall["origin"] == "proxy" and recall["query"] == "Ada collects vintage maps"
    assert recall["protocol"] == "proxy"


def test_the_recent_list_holds_turns_and_their_recalls_newest_first(proxy: Proxy) -> None:
    turn_id, _ = memory_turn(proxy, "u-list", "Cy restores old clocks")
    listed = httpx.get(f"{proxy.base_url}/inspect", params={"containerTag": "u-list"}).json()
    kinds = [(t["type"], t["traceId"]) for t in listed["traces"]]
    assert kinds[0] == ("turn", turn_id)  # the turn's event comes after its recall's
    assert kinds[1][0] == "recall"
    turn = listed["traces"][0]
    assert (turn["memoryRound"], turn["results"], turn["status"]) == (True, 1, "answer")
    seqs = [t["seq"] for t in listed["traces"]]
    assert seqs == sorted(seqs, reverse=True)
    only = httpx.get(f"{proxy.base_url}/inspect", params={"containerTag": "u-list", "type": "turn"})
    assert [t["type"] for t in only.json()["traces"]] == ["turn"]
    rest = httpx.get(f"{proxy.base_url}/inspect", params={"origin": "rest", "type": "turn"})
    assert rest.json()["traces"] == []
    bad = httpx.get(f"{proxy.base_url}/inspect", params={"type": "x"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_input"


def test_an_erased_memory_shows_as_erased_in_the_turn(proxy: Proxy) -> None:
    turn_id, memory_id = memory_turn(proxy, "u-erase", "Bo keeps bees on the roof")
    proxy.checked_seq = proxy.runtime.log.head().seq  # its text is gone: nothing to rebuild
    assert httpx.delete(f"{proxy.base_url}/memories/{memory_id}").status_code == 200
    (injection,) = httpx.get(f"{proxy.base_url}/inspect/{turn_id}").json()["injections"]
    assert injection["reproduced"] is None
    assert injection["memories"][0]["erased"] is True
    assert injection["memories"][0]["content"] is None
    assert len(injection["sentDigest"]) == 64  # the digest of what was sent stays


def test_a_rebuilt_traces_projection_holds_the_same_turns(proxy: Proxy, tmp_path: Path) -> None:
    turn_id, _ = memory_turn(proxy, "u-rebuild", "Cy speaks Welsh at home")
    rebuilt = TraceProjection(tmp_path / "traces.sqlite3", proxy.runtime.sealer)
    try:
        rebuilt.apply(list(proxy.runtime.log.read()))
        assert rebuilt.turn(turn_id) == proxy.runtime.core.traces.turn(turn_id)
    finally:
        rebuilt.close()


def test_the_model_is_sealed_and_a_turn_stored_with_it_in_clear_still_shows_it(
    proxy: Proxy,
) -> None:
    turn_id, _ = memory_turn(proxy, "u-model", "Di grows figs")
    (turn,) = [
        s.record.event
        for s in proxy.runtime.log.read()
        if isinstance(s.record.event, ProxyTurn) and s.record.event.turn_id == turn_id
    ]
    assert turn.model == "" and turn.sealed_model is not None
    assert turn.sealed_model.subject == "container:u-model"
    assert httpx.get(f"{proxy.base_url}/inspect/{turn_id}").json()["model"] == "m"
    # A turn recorded before the model was sealed names it in clear.
    old = ProxyTurn(
        turn_id="trn_0123456789abcdef0123456789abcdef",
        container_tag="u-model",
        model="gpt-4o-mini",
        stream=False,
        request_digest="0" * 64,
    )
    proxy.runtime.core.turns.record(Actor(agent_id="local", protocol="proxy"), old, [])
    proxy.checked_seq = proxy.runtime.log.head().seq  # no upstream call: nothing to check
    shown = httpx.get(f"{proxy.base_url}/inspect/{old.turn_id}").json()
    assert shown["model"] == "gpt-4o-mini"


def test_the_memory_round_is_reranked_by_default_and_its_trace_says_how(proxy: Proxy) -> None:
    """The proxy's memory round is where an agent asks: it reranks with no setting, at the
    agent pool, and the recall's trace records the reranker and the pool it served with."""
    turn_id, _ = memory_turn(proxy, "u-rerank", "Ilse keeps bees on her roof")
    params = recall_params(proxy, turn_id)
    assert params["rerank"] is True and params["rerankPool"] == 10, params
    assert str(params["reranker"]).startswith("ms-marco-MiniLM-L-12-v2"), params


def recall_params(proxy: Proxy, turn_id: str) -> dict[str, object]:
    trace = httpx.get(f"{proxy.base_url}/inspect/{turn_id}").json()
    (injection,) = trace["injections"]
    recall = httpx.get(f"{proxy.base_url}/inspect/{injection['recallId']}").json()
    params: dict[str, object] = recall["params"]
    return params


def test_a_request_may_take_the_fast_path_or_say_nothing(proxy: Proxy) -> None:
    """``mnemolog.rerank: false`` (or ``x-mnemolog-rerank: off``) serves the round unreranked;
    true reranks it; a flag that is not on or off is refused and nothing is written."""
    fast, _ = memory_turn(
        proxy, "u-fast", "Ilse sells honey", extra_body={"mnemolog": {"rerank": False}}
    )
    assert "rerank" not in recall_params(proxy, fast)
    header, _ = memory_turn(
        proxy, "u-fast-h", "Ilse sells wax", headers={"x-mnemolog-rerank": "off"}
    )
    assert "rerank" not in recall_params(proxy, header)
    asked, _ = memory_turn(proxy, "u-on", "Ilse sells candles", headers={"x-mnemolog-rerank": "on"})
    assert recall_params(proxy, asked)["rerank"] is True
    before = proxy.runtime.log.head().seq
    refused = httpx.post(
        f"{proxy.v1}/chat/completions",
        headers={"x-mnemolog-rerank": "sometimes"},
        json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == "invalid_input"
    assert "x-mnemolog-rerank" in refused.json()["error"]["message"]
    assert proxy.runtime.log.head().seq == before


def test_a_version_leads_to_the_recalls_that_served_it_and_the_turns_that_injected_it(
    proxy: Proxy, tmp_path: Path
) -> None:
    turn_id, memory_id = memory_turn(proxy, "u-follow", "Eli restores old radios")
    core = proxy.runtime.core
    latest = core.memories.latest(memory_id)
    assert latest is not None
    searched = httpx.post(
        f"{proxy.base_url}/search", json={"q": "old radios", "containerTag": "u-follow"}
    ).json()
    httpx.get(f"{proxy.base_url}/inspect", params={"limit": 1})  # the search's trace landed
    (injection,) = httpx.get(f"{proxy.base_url}/inspect/{turn_id}").json()["injections"]
    traces = core.traces
    recalls, turns = traces.of_versions([latest.version_id], containers=None, limit=10)
    # Newest first: the REST search, then the proxy's memory round; the turn that injected it.
    assert [(r.trace_id, r.origin) for r in recalls] == [
        (searched["traceId"], "rest"),
        (injection["recallId"], "proxy"),
    ]
    assert recalls[0].query == "old radios" and recalls[0].container_tag == "u-follow"
    assert [(t.trace_id, t.origin, t.agent_id) for t in turns] == [(turn_id, "proxy", "local")]
    assert turns[0].seq > recalls[1].seq and turns[0].at > 0
    # Bounded, and a key scoped to other containers sees none of them.
    assert [
        r.trace_id for r in traces.of_versions([latest.version_id], containers=None, limit=1)[0]
    ] == [searched["traceId"]]
    assert traces.of_versions([latest.version_id], containers={"other"}, limit=10) == ([], [])
    assert traces.of_versions(["nosuch"], containers=None, limit=10) == ([], [])
    rebuilt = TraceProjection(tmp_path / "traces.sqlite3", proxy.runtime.sealer)
    try:
        rebuilt.apply(list(proxy.runtime.log.read()))
        assert rebuilt.of_versions([latest.version_id], containers={"u-follow"}, limit=10) == (
            recalls,
            turns,
        )
    finally:
        rebuilt.close()
