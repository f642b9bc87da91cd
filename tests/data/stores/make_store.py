"""Writes ``float32-vectors.tar.gz``: a small store in the format mnemolog wrote before vectors
were stored as float16 (commit dd4bf0d and earlier), and ``float32-vectors.json``, what that
server answered about it. ``tests/test_upcasting.py`` opens the store with today's code and
checks it still answers the same.

    .venv/bin/python tests/data/stores/make_store.py   # with the code of that commit

Kept for the record: run by today's code it would write today's format.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).parent
MNEMOLOG = str(Path(sys.executable).parent / "mnemolog")
QUERIES = [
    ("alice", "where does she live"),
    ("alice", "what does she eat"),
    ("bob", "which languages"),
    ("bob", "pets"),
]
ALICE = [
    "Alice lives in Lisbon, in a flat near the river.",
    "Alice is vegetarian and cooks a lot of lentils.",
    "Alice works as a structural engineer on bridges.",
    "Alice's sister Maria is a nurse in Porto.",
    "Alice runs 10 km every Sunday morning.",
    "Alice is allergic to penicillin.",
    "Alice prefers tea to coffee, green tea above all.",
    "Alice is learning Japanese for a trip in April.",
    "Alice drives an old blue Renault.",
    "Alice's birthday is on 14 March.",
]
BOB = [
    "Bob speaks Spanish, German and a little Finnish.",
    "Bob has two cats called Miso and Tofu.",
    "Bob plays bass in a jazz trio on Thursdays.",
    "Bob's flat is in Berlin, Kreuzberg.",
    "Bob writes Rust at work and Python at home.",
    "Bob cannot eat gluten.",
    "Bob is saving for a sailing boat.",
    "Bob's manager is called Ingrid.",
]
DOCUMENT = (
    "Trip plan. Day one: arrive in Osaka, walk around Dotonbori in the evening. "
    "Day two: Nara park and the deer, Todai-ji temple. Day three: Kyoto, Fushimi Inari "
    "at dawn before the crowds, then Gion. Day four: the train to Tokyo, a night in "
    "Shinjuku. Keep the rail pass receipt: it is needed at the airport."
) * 3


def main() -> None:
    work = Path(tempfile.mkdtemp())
    data_dir = work / "store"
    port = 8931
    env = {**os.environ, "MNEMOLOG_EMBEDDER": "fast", "MNEMOLOG_ACCESS_LOG": "false"}
    server = subprocess.Popen(
        [MNEMOLOG, "serve", "--data-dir", str(data_dir), "--port", str(port)], env=env
    )
    base = f"http://127.0.0.1:{port}"
    expected: dict[str, object] = {}
    try:
        for _ in range(300):
            try:
                httpx.get(f"{base}/health", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        client = httpx.Client(base_url=base, timeout=30)

        def write(tag: str, texts: list[str]) -> list[str]:
            body = {"containerTag": tag, "memories": [{"content": t} for t in texts]}
            answer = client.post("/memories", json=body)
            answer.raise_for_status()
            return [m["id"] for m in answer.json()["memories"]]

        alice = write("alice", ALICE)
        write("bob", BOB)
        write("carol", ["Carol's PIN is 4821.", "Carol lives in Oslo."])
        client.patch(
            f"/memories/{alice[0]}", json={"content": "Alice lives in Porto now, near her sister."}
        ).raise_for_status()
        client.post(f"/memories/{alice[8]}/forget", json={"reason": "sold the car"})
        client.post(
            "/documents", json={"containerTag": "alice", "title": "Japan", "content": DOCUMENT}
        ).raise_for_status()
        client.delete("/containers/carol").raise_for_status()
        searches = []
        for tag, q in QUERIES:
            found = client.post("/search", json={"q": q, "containerTag": tag}).json()
            searches.append(
                {"containerTag": tag, "q": q, "ids": [r["id"] for r in found["results"]]}
            )
        documents = client.post(
            "/search", json={"q": "deer temple", "containerTag": "alice", "searchMode": "documents"}
        ).json()
        expected["searches"] = searches
        expected["documentSearch"] = [
            [r["documentId"], r["chunkIndex"]] for r in documents["results"]
        ]
        expected["memories"] = {
            tag: client.get("/memories", params={"containerTag": tag, "limit": 100}).json()
            for tag in ("alice", "bob")
        }
        client.get("/inspect", params={"limit": 1})
        expected["head"] = client.get("/health").json()["log"]["head"]
    finally:
        server.terminate()
        server.wait(timeout=60)
    (HERE / "float32-vectors.json").write_text(json.dumps(expected, indent=1) + "\n")
    with tarfile.open(HERE / "float32-vectors.tar.gz", "w:gz") as tar:
        tar.add(data_dir, arcname="store")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
