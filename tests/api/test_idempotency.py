"""Safe retries of writes over a real server: ``POST /memories`` with an ``Idempotency-Key``
answers a retry with the first answer and appends nothing; the key with another request is a
409; concurrent requests with one key write once; a failed write leaves its key unused; the key
survives a rebuild and a container's erasure forgets it; keys are per agent."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from ..servers import MNEMOLOG, add_key, mnemolog_server, settled_head

ENV = {"MNEMOLOG_EMBEDDER": "quality"}
REPLAYED = "idempotent-replayed"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    data_dir = tmp_path_factory.mktemp("idempotency") / "data"
    with (
        mnemolog_server(data_dir, ENV) as (base_url, _),
        httpx.Client(base_url=base_url, timeout=60) as client,
    ):
        yield client


def body(container: str, *texts: str) -> dict[str, object]:
    return {"containerTag": container, "memories": [{"content": t} for t in texts]}


def post(client: httpx.Client, payload: object, key: str | bytes | None) -> httpx.Response:
    headers = {} if key is None else {"idempotency-key": key}
    return client.post("/memories", json=payload, headers=headers)


def test_a_retry_is_answered_the_first_answer_and_appends_nothing(client: httpx.Client) -> None:
    payload = body("retry", "Mara keeps her bike in the hallway", "Mara's bike is a red Bianchi")
    first = post(client, payload, "import-row-1")
    assert first.status_code == 200 and REPLAYED not in first.headers
    assert [m["status"] for m in first.json()["memories"]] == ["created", "created"]
    head = settled_head(client)
    for _ in range(2):
        again = post(client, payload, "import-row-1")
        assert again.status_code == 200
        assert again.headers[REPLAYED] == "true"
        assert again.json() == first.json()  # the same ids, statuses and seqs
    assert settled_head(client) == head
    listed = client.get("/memories", params={"containerTag": "retry"}).json()
    assert listed["total"] == 2


def test_a_key_with_another_request_is_a_409_and_appends_nothing(client: httpx.Client) -> None:
    assert post(client, body("conflict", "Ivo drinks oolong"), "k-conflict").status_code == 200
    head = settled_head(client)
    refused = post(client, body("conflict", "Ivo drinks sencha"), "k-conflict")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "idempotency_conflict"
    assert settled_head(client) == head
    texts = [m["content"] for m in client.get("/memories?containerTag=conflict").json()["memories"]]
    assert texts == ["Ivo drinks oolong"]


def test_concurrent_requests_with_one_key_write_once(client: httpx.Client) -> None:
    payload = body("race", "The spare key is under the blue flowerpot")
    head = settled_head(client)

    def send(_: int) -> httpx.Response:
        return post(client, payload, "k-race")

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(send, range(8)))
    assert all(a.status_code == 200 for a in answers)
    assert len({a.text for a in answers}) == 1
    assert sum(REPLAYED not in a.headers for a in answers) == 1
    listed = client.get("/memories", params={"containerTag": "race"}).json()
    assert listed["total"] == 1
    # One memory.written and its write.keyed; nothing else.
    assert settled_head(client) == head + 2


def test_a_failed_write_leaves_its_key_unused(client: httpx.Client) -> None:
    failing = {"containerTag": "failed", "memories": [{"content": "x", "supersedes": "mem_none"}]}
    head = settled_head(client)
    assert post(client, failing, "k-failed").status_code == 404
    assert settled_head(client) == head
    written = post(client, body("failed", "Noor's flight lands at 9"), "k-failed")
    assert written.status_code == 200 and REPLAYED not in written.headers
    assert written.json()["memories"][0]["status"] == "created"


@pytest.mark.parametrize(
    "key",
    ["", "x" * 201, b"caf\xc3\xa9", b"tab\there"],
    ids=["empty", "too-long", "not-ascii", "control"],
)
def test_a_bad_key_is_a_400_and_appends_nothing(client: httpx.Client, key: str | bytes) -> None:
    head = settled_head(client)
    refused = post(client, body("bad-key", "Otto owns a kayak"), key)
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "invalid_input"
    assert "Idempotency-Key" in refused.json()["error"]["message"]
    assert settled_head(client) == head


def test_a_key_sent_twice_is_a_400(client: httpx.Client) -> None:
    head = settled_head(client)
    refused = client.post(
        "/memories",
        json=body("bad-key", "Otto owns a kayak"),
        headers=[("idempotency-key", "a"), ("idempotency-key", "b")],
    )
    assert refused.status_code == 400 and settled_head(client) == head


def test_the_longest_key_is_taken(client: httpx.Client) -> None:
    key = "~ !" * 66 + "zz"  # 200 printable characters, spaces among them
    first = post(client, body("long-key", "Pia plays the oboe"), key)
    assert first.status_code == 200
    assert post(client, body("long-key", "Pia plays the oboe"), key).headers[REPLAYED] == "true"


def test_erasing_the_container_forgets_its_keys(client: httpx.Client) -> None:
    payload = body("erased", "Remy is allergic to walnuts")
    first = post(client, payload, "k-erased").json()["memories"][0]
    assert client.delete("/containers/erased").status_code == 200
    again = post(client, payload, "k-erased")
    assert again.status_code == 200 and REPLAYED not in again.headers
    assert again.json()["memories"][0]["id"] != first["id"]


def test_a_key_replays_after_a_rebuild(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    payload = body("rebuilt", "Sol waters the ferns on Sundays", "Sol's ferns are on the sill")
    with mnemolog_server(data_dir, ENV) as (base_url, _), httpx.Client(base_url=base_url) as c:
        first = post(c, payload, "k-rebuild")
        assert first.status_code == 200
        head = settled_head(c)
    (data_dir / "projections" / "memories.sqlite3").unlink()
    done = subprocess.run(
        [MNEMOLOG, "rebuild", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        env={**os.environ, **ENV},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    with mnemolog_server(data_dir, ENV) as (base_url, _), httpx.Client(base_url=base_url) as c:
        again = post(c, payload, "k-rebuild")
        assert again.headers[REPLAYED] == "true"
        assert again.json() == first.json()
        assert settled_head(c) == head
        assert post(c, body("rebuilt", "Sol hates ferns"), "k-rebuild").status_code == 409


def test_a_key_is_its_agents_own(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    tokens = {agent: add_key(data_dir, agent) for agent in ("alice", "bob")}
    with mnemolog_server(data_dir, ENV) as (base_url, _):

        def client_of(agent: str) -> httpx.Client:
            bearer = {"authorization": f"Bearer {tokens[agent]}"}
            return httpx.Client(base_url=base_url, headers=bearer, timeout=60)

        with client_of("alice") as alice, client_of("bob") as bob:
            mine = post(alice, body("shared", "Alice parks on level 2"), "k-shared")
            assert mine.status_code == 200
            # The same key from another agent is unknown: neither a replay nor a conflict.
            theirs = post(bob, body("shared", "Bob parks on level 5"), "k-shared")
            assert theirs.status_code == 200 and REPLAYED not in theirs.headers
            assert theirs.json()["memories"][0]["id"] != mine.json()["memories"][0]["id"]
            again = post(bob, body("shared", "Bob parks on level 5"), "k-shared")
            assert again.headers[REPLAYED] == "true" and again.json() == theirs.json()
            replayed = post(alice, body("shared", "Alice parks on level 2"), "k-shared")
            assert replayed.json() == mine.json()
