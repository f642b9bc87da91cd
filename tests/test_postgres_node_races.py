"""Nodes on one PostgreSQL log writing into the same containers at the same moment, as real
processes: no write is ever refused because another node wrote at once, and every write is
decided as it would be on one node.

Four writers per node post into the same two containers without retrying: every write is
answered 200. A fact written on every node at the same instant is one memory (one write made
it, the others were told it was there). Two nodes correcting the same version of a memory at
the same instant, each naming the version it expects: one correction wins, the other is told
409 ``version_conflict``, exactly as two writers on one node are."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from .nodes import listed, nodes, nth_write
from .postgres import run_all

pytestmark = pytest.mark.slow

WRITERS = 4  # per node
WRITES_PER_WRITER = 48
SHARED_EVERY = 3  # every third write of each writer is a fact every writer writes at once
ROUNDS = 12


def at_once(urls: list[str], post: Callable[[httpx.Client, int], httpx.Response]) -> list[Any]:
    """``post(client, node)`` on every node at the same instant; their answers, by node."""
    start = threading.Barrier(len(urls))
    answers: list[Any] = [None] * len(urls)

    def run(n: int) -> None:
        with httpx.Client(base_url=urls[n], timeout=60) as client:
            start.wait()
            answers[n] = post(client, n)

    run_all([threading.Thread(target=run, args=(n,)) for n in range(len(urls))], timeout=120)
    return answers


@pytest.mark.parametrize("count", [2, 3])
def test_writers_on_every_node_in_the_same_containers_are_never_refused(
    tmp_path: Path, log_url: str, count: int
) -> None:
    refused: list[str] = []
    answers: list[dict[str, Any]] = []
    lock = threading.Lock()
    start = threading.Barrier(count * WRITERS)

    def writer(base_url: str) -> None:
        with httpx.Client(base_url=base_url, timeout=60) as client:
            start.wait()
            for n in range(WRITES_PER_WRITER):
                tag = ("team-a", "team-b")[n % 2]
                content = nth_write(n, tag, SHARED_EVERY)
                body = {"containerTag": tag, "memories": [{"content": content}]}
                answer = client.post("/memories", json=body)
                with lock:
                    if answer.status_code != 200:
                        refused.append(f"{answer.status_code} {answer.text}")
                        continue
                    memory = answer.json()["memories"][0]
                    answers.append({**memory, "containerTag": tag, "content": content})

    with nodes(tmp_path, log_url, count) as urls:
        run_all(
            [
                threading.Thread(target=writer, args=(base_url,))
                for base_url in urls
                for _ in range(WRITERS)
            ]
        )
        assert refused == []
        assert len(answers) == count * WRITERS * WRITES_PER_WRITER

        head = max(httpx.get(f"{u}/stats").json()["log"]["head"] for u in urls)
        served = []
        for base_url in urls:
            with httpx.Client(base_url=base_url, timeout=60) as client:
                served.append({tag: listed(client, tag, head) for tag in ("team-a", "team-b")})
    assert all(view == served[0] for view in served[1:])

    # Each shared fact is one memory, made by one write; every other write of it was told so.
    for content in {a["content"] for a in answers if a["content"].startswith("Team rule")}:
        writes = [a for a in answers if a["content"] == content]
        assert len(writes) == count * WRITERS
        assert len({a["id"] for a in writes}) == 1, writes
        assert [a["status"] for a in writes].count("created") == 1, writes
    # Every memory served was made by exactly one acknowledged write, and every one is served.
    created = {a["id"]: a for a in answers if a["status"] == "created"}
    assert {(a["containerTag"], i) for i, a in created.items()} == {
        (tag, i) for tag, rows in served[0].items() for i in rows
    }


def test_two_nodes_deciding_about_one_memory_at_once_decide_as_one_node_would(
    tmp_path: Path, log_url: str
) -> None:
    with nodes(tmp_path, log_url, 2) as urls:
        # The same new fact written on both nodes at the same instant: one memory.
        for n in range(ROUNDS):
            content = f"The release train {n} ({uuid.uuid4().hex[:8]}) leaves on Thursday."
            body = {"containerTag": "team", "memories": [{"content": content}]}
            written = at_once(
                urls, lambda client, _, body=body: client.post("/memories", json=body)
            )
            assert [a.status_code for a in written] == [200, 200], [a.text for a in written]
            memories = [a.json()["memories"][0] for a in written]
            assert len({m["id"] for m in memories}) == 1, memories
            assert sorted(m["status"] for m in memories) == ["created", "deduplicated"]

        # Both nodes correcting the version they read, at the same instant: one wins.
        made = httpx.post(
            f"{urls[0]}/memories",
            json={"containerTag": "team", "memories": [{"content": "The on-call phone is 100."}]},
        ).json()["memories"][0]
        version = 1
        for n in range(ROUNDS):
            fixes = [
                {
                    "containerTag": "team",
                    "memories": [
                        {
                            "content": f"The on-call phone is {200 + 10 * n + node}.",
                            "supersedes": made["id"],
                            "expectedVersion": version,
                        }
                    ],
                }
                for node in range(2)
            ]
            answers = at_once(
                urls, lambda client, node, fixes=fixes: client.post("/memories", json=fixes[node])
            )
            assert sorted(a.status_code for a in answers) == [200, 409], [a.text for a in answers]
            (won,) = [a.json()["memories"][0] for a in answers if a.status_code == 200]
            (lost,) = [a.json()["error"] for a in answers if a.status_code == 409]
            assert won["status"] == "superseded" and won["version"] == version + 1
            assert lost["code"] == "version_conflict"
            version += 1
        for base_url in urls:
            seq = httpx.get(f"{base_url}/stats").json()["log"]["head"]
            chain = httpx.get(f"{base_url}/memories/{made['id']}", params={"minSeq": seq}).json()
            assert [v["version"] for v in chain["versions"]] == list(range(1, version + 1))
