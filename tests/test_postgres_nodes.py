"""Several mnemolog nodes on one PostgreSQL log, as real processes: writers on every node at
once, the same facts written on several nodes at the same moment, reads on one node of what
was written on another.

Afterwards there is one chain (an export that ``tools/verify_log.py`` accepts), every node
serves the same read models (``GET /digest`` at the same seq), every acknowledged write is
served exactly once, a fact written on three nodes at once is one memory, and a read sent with
``minSeq`` on one node sees a write made on another, every time."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from .nodes import mnemolog, nodes, nth_write
from .test_postgres_store import VERIFY

pytestmark = pytest.mark.slow

WRITES_PER_WRITER = 24
SHARED_EVERY = 4  # every fourth write of each writer is a fact every writer writes too


def write(client: httpx.Client, body: dict[str, Any], key: str) -> dict[str, Any]:
    """POST /memories with an Idempotency-Key, retried with it while the node answers 503."""
    for _ in range(50):
        answer = client.post("/memories", json=body, headers={"Idempotency-Key": key})
        if answer.status_code == 200:
            memory: dict[str, Any] = answer.json()["memories"][0]
            return memory
        assert answer.status_code == 503, answer.text
    raise AssertionError(f"{key} never landed")


def served_everywhere(urls: list[str], head: int) -> list[dict[str, Any]]:
    """What each node serves once it has applied the log through ``head``: its digest and
    lists first (they append nothing), then searches (each appends its recall)."""
    views: list[dict[str, Any]] = []
    for base_url in urls:
        with httpx.Client(base_url=base_url, timeout=60) as client:
            digest = client.get("/digest", params={"minSeq": head})
            assert digest.status_code == 200, digest.text
            memories = {}
            for tag in ("team-a", "team-b"):
                listed = client.get(
                    "/memories", params={"containerTag": tag, "limit": 500, "minSeq": head}
                ).json()
                memories[tag] = sorted((m["id"], m["content"]) for m in listed["memories"])
            views.append({"digest": digest.json(), "memories": memories})
    # BM25 scores a document with the statistics of what its index has committed, and a node
    # commits 0.5 s after its oldest uncommitted write (projections/fulltext/index.py): then every
    # node's statistics are those of the same documents.
    time.sleep(1.5)
    for base_url, view in zip(urls, views, strict=True):
        # The vector and full-text indexes too: the same hits, scores and order (recency
        # off: it weighs by the time of the query).
        found = {}
        for tag in ("team-a", "team-b"):
            for q in ("Which vault opens with code 7?", "every deploy needs two reviews"):
                body = {"q": q, "containerTag": tag, "limit": 20, "recency": False}
                hits = httpx.post(f"{base_url}/search", json=body, timeout=60).json()["results"]
                found[f"{tag}: {q}"] = [(h["id"], h["score"]) for h in hits]
        assert found["team-a: every deploy needs two reviews"], found  # the shared facts
        view["search"] = found
    return views


@pytest.mark.parametrize("count", [2, 3])
def test_nodes_writing_at_once_keep_one_chain_and_agree(
    tmp_path: Path, log_url: str, count: int
) -> None:
    answers: dict[str, dict[str, Any]] = {}
    shared: dict[str, str] = {}  # the key of each write of a shared fact -> its content
    lock = threading.Lock()
    start = threading.Barrier(count * 2)

    def writer(base_url: str, name: str) -> None:
        with httpx.Client(base_url=base_url, timeout=60) as client:
            start.wait()
            for n in range(WRITES_PER_WRITER):
                tag = ("team-a", "team-b")[n % 2]
                content = nth_write(n, tag, SHARED_EVERY)
                key = f"{name}-{n}"
                memory = write(
                    client, {"containerTag": tag, "memories": [{"content": content}]}, key
                )
                with lock:
                    answers[key] = {**memory, "containerTag": tag, "content": content}
                    if n % SHARED_EVERY == 0:
                        shared[key] = content

    with nodes(tmp_path, log_url, count) as urls:
        threads = [
            threading.Thread(target=writer, args=(base_url, f"node{n}-w{w}"))
            for n, base_url in enumerate(urls)
            for w in range(2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
        assert len(answers) == count * 2 * WRITES_PER_WRITER

        heads = [httpx.get(f"{u}/stats").json()["log"]["head"] for u in urls]
        views = served_everywhere(urls, max(heads))

    # Every node serves the same read models at the same seq.
    for part in ("digest", "memories", "search"):
        for n, view in enumerate(views[1:], 1):
            assert view[part] == views[0][part], f"node {n} differs from node 0 in {part}"
    served = {tag: dict(rows) for tag, rows in views[0]["memories"].items()}

    # A fact written on every node at once is one memory: one write made it, the rest were
    # told it was there already.
    for content in set(shared.values()):
        writes = [a for key, a in answers.items() if shared.get(key) == content]
        assert len({a["id"] for a in writes}) == 1, writes
        assert sorted(a["status"] for a in writes).count("created") == 1, writes
        tag = writes[0]["containerTag"]
        assert served[tag][writes[0]["id"]] == content

    # Every acknowledged write is served, once; nothing else is.
    created = {a["id"]: a for a in answers.values() if a["status"] == "created"}
    assert {(a["containerTag"], i) for i, a in created.items()} == {
        (tag, i) for tag, rows in served.items() for i in rows
    }
    for memory_id, answer in created.items():
        assert served[answer["containerTag"]][memory_id] == answer["content"]

    # One chain: the export from any node verifies, and records each memory written once.
    export = tmp_path / "log.jsonl"
    exported = mnemolog(
        log_url, "export-log", "--data-dir", str(tmp_path / "node-0"), "-o", str(export)
    )
    assert exported.returncode == 0, exported.stderr
    outside = subprocess.run(
        [sys.executable, str(VERIFY), str(export)], capture_output=True, text=True
    )
    assert outside.returncode == 0, outside.stdout + outside.stderr
    kinds = [json.loads(line)["kind"] for line in export.read_text().splitlines()[1:]]
    assert kinds.count("memory.written") == len(created)
    verified = mnemolog(log_url, "verify-log", "--data-dir", str(tmp_path / "node-1"))
    assert verified.returncode == 0 and f"ok: {len(kinds)} records" in verified.stdout


def test_a_read_with_min_seq_sees_a_write_made_on_another_node(
    tmp_path: Path, log_url: str
) -> None:
    seen = 0
    with (
        nodes(tmp_path, log_url, 2) as (a, b),
        httpx.Client(base_url=a, timeout=30) as on_a,
        httpx.Client(base_url=b, timeout=30) as on_b,
    ):
        for n in range(100):
            writer, reader = (on_a, on_b) if n % 2 == 0 else (on_b, on_a)
            content = f"Ticket {n} ({uuid.uuid4().hex[:8]}) is assigned to Ana."
            written = writer.post(
                "/memories", json={"containerTag": "team", "memories": [{"content": content}]}
            )
            assert written.status_code == 200, written.text
            memory = written.json()["memories"][0]
            got = reader.get(f"/memories/{memory['id']}", params={"minSeq": memory["seq"]})
            if got.status_code == 200 and got.json()["versions"][-1]["content"] == content:
                seen += 1
            if n % 10 == 0:  # a search too: the write is found by its words
                found = reader.post(
                    "/search",
                    json={
                        "q": f"Ticket {n} assigned",
                        "containerTag": "team",
                        "minSeq": memory["seq"],
                    },
                )
                assert found.status_code == 200, found.text
                assert content in [hit["content"] for hit in found.json()["results"]]
        # A seq no write was answered with: refused at once, naming the log's head.
        head = on_a.get("/stats").json()["log"]["head"]
        ahead = on_b.get("/memories", params={"minSeq": head + 1000})
        assert ahead.status_code == 400
        error = ahead.json()["error"]
        assert error["code"] == "min_seq_ahead" and f"minSeq {head + 1000}" in error["message"]
        refused = on_b.get("/memories", params={"minSeq": -1})
        assert refused.status_code == 400
    assert seen == 100
