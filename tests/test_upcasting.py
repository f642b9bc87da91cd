"""A store written before vectors were stored as float16 opens, serves, replays and verifies
unchanged with today's code; the records written after it are the compact ones.

The store and what its server answered are ``tests/data/stores/float32-vectors.*``, written by
``make_store.py`` there with the code of that time.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from .servers import MNEMOLOG, mnemolog_server

STORES = Path(__file__).parent / "data" / "stores"
ENV = {"MNEMOLOG_EMBEDDER": "fast"}
GCM_TAG = 16


@pytest.fixture
def old_store(tmp_path: Path) -> Path:
    with tarfile.open(STORES / "float32-vectors.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    return tmp_path / "store"


def expected() -> dict[str, Any]:
    found: dict[str, Any] = json.loads((STORES / "float32-vectors.json").read_text())
    return found


def mnemolog(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MNEMOLOG, *args], capture_output=True, text=True, env={**os.environ, **ENV}, timeout=300
    )


def served(client: httpx.Client) -> dict[str, Any]:
    searches = [
        {
            "containerTag": s["containerTag"],
            "q": s["q"],
            "ids": [
                r["id"]
                for r in client.post(
                    "/search", json={"q": s["q"], "containerTag": s["containerTag"]}
                ).json()["results"]
            ],
        }
        for s in expected()["searches"]
    ]
    documents = client.post(
        "/search", json={"q": "deer temple", "containerTag": "alice", "searchMode": "documents"}
    ).json()["results"]
    return {
        "searches": searches,
        "documentSearch": [[r["documentId"], r["chunkIndex"]] for r in documents],
        "memories": {
            tag: client.get("/memories", params={"containerTag": tag, "limit": 100}).json()
            for tag in ("alice", "bob")
        },
    }


def embedding_sizes(data_dir: Path) -> dict[int, int]:
    """seq -> plaintext bytes of each ``memory.written`` record's sealed vector."""
    done = mnemolog("export-log", "--data-dir", str(data_dir))
    assert done.returncode == 0, done.stderr
    sizes = {}
    for line in done.stdout.splitlines()[1:]:
        record = json.loads(line)
        event = record["event"]
        if event["type"] == "memory.written" and event.get("embedding"):
            sizes[record["seq"]] = len(base64.b64decode(event["embedding"]["ct"])) - GCM_TAG
    return sizes


def test_a_store_of_float32_vectors_serves_replays_and_verifies_unchanged(old_store: Path) -> None:
    then = expected()
    verified = mnemolog("verify-log", "--data-dir", str(old_store))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert set(embedding_sizes(old_store).values()) == {256 * 4}  # float32, as written

    with (
        mnemolog_server(old_store, ENV) as (base_url, _),
        httpx.Client(base_url=base_url, timeout=30) as client,
    ):
        assert client.get("/health").json()["log"]["head"] == then["head"]
        now = served(client)
        assert now == {k: then[k] for k in now}
    replayed = mnemolog("replay", "--check-traces", "--json", "--data-dir", str(old_store))
    assert replayed.returncode == 0, replayed.stdout[-2000:] + replayed.stderr[-2000:]
    assert json.loads(replayed.stdout)["checked"] >= len(then["searches"])


def test_writes_after_it_are_float16_and_both_kinds_serve_and_rebuild(old_store: Path) -> None:
    with (
        mnemolog_server(old_store, ENV) as (base_url, _),
        httpx.Client(base_url=base_url, timeout=30) as client,
    ):
        written = client.post(
            "/memories",
            json={
                "containerTag": "alice",
                "memories": [{"content": "Alice adopted a grey cat called Pimenta."}],
            },
        ).json()["memories"][0]
        client.post(
            "/documents",
            json={"containerTag": "bob", "content": "Boat list: sails, rope, a VHF radio."},
        ).raise_for_status()
        found = client.post("/search", json={"q": "cat", "containerTag": "alice"}).json()
        assert written["id"] in [r["id"] for r in found["results"]]
        before = served(client)
        boat = client.post(
            "/search", json={"q": "VHF radio", "containerTag": "bob", "searchMode": "documents"}
        ).json()["results"]
        assert boat and "VHF" in boat[0]["content"]
    assert before["searches"] == expected()["searches"]

    sizes = embedding_sizes(old_store)
    assert sizes[max(sizes)] == 1 + 256 * 2  # the format byte and float16
    assert sorted(set(sizes.values())) == [1 + 256 * 2, 256 * 4]
    verified = mnemolog("verify-log", "--data-dir", str(old_store))
    assert verified.returncode == 0, verified.stdout + verified.stderr

    shutil.rmtree(old_store / "projections")
    shutil.rmtree(old_store / "snapshots")
    rebuilt = mnemolog("rebuild", "--data-dir", str(old_store))
    assert rebuilt.returncode == 0, rebuilt.stderr
    with (
        mnemolog_server(old_store, ENV) as (base_url, _),
        httpx.Client(base_url=base_url, timeout=30) as client,
    ):
        assert served(client) == before
    replayed = mnemolog("replay", "--check-traces", "--json", "--data-dir", str(old_store))
    assert replayed.returncode == 0, replayed.stdout[-2000:] + replayed.stderr[-2000:]
