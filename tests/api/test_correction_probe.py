"""The correction probe of ``bench/corrections.py`` (the Bellamente paper, §6.3), explicit
corrections only, over a real server: seed a fact, correct it d times naming its chain in
``supersedes``, then (a) recall serves the latest value and no earlier one, (b) after the
chain is forgotten no value is served, (c) after it is restored the latest is on top again.
Explicit corrections must pass every time. Automatic ones are not asserted here: their rule is
being tuned, and the bench reports how they fare."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from ..servers import mnemolog_server


def words(text: str) -> list[str]:
    return text.split()


# (question, 11 values, restatement template, loose templates)
FAMILIES = {
    "colour": (
        "What is Kim's favourite colour?",
        words("blue green red yellow purple orange teal black white grey pink"),
        "Kim's favourite colour is {v}.",
        (
            "These days Kim likes {v} best.",
            "Ask Kim and she will tell you {v} is the colour she loves most.",
            "Kim has switched to {v} as the shade she prefers over all others.",
        ),
    ),
    "city": (
        "Where does Dana live?",
        words("Lisbon Osaka Nairobi Montreal Tallinn Porto Hanoi Seoul Bergen Quito Riga"),
        "Dana lives in {v}.",
        (
            "Dana has moved house and is settled in {v}.",
            "These days you will find Dana at home in {v}.",
            "Dana relocated; {v} is where she is based.",
        ),
    ),
    "database": (
        "Which database does project Falcon use?",
        words(
            "PostgreSQL MySQL SQLite MongoDB Cassandra Redis DynamoDB CockroachDB MariaDB"
            " Firestore ClickHouse"
        ),
        "Project Falcon uses {v} as its database.",
        (
            "The Falcon team migrated their storage over to {v}.",
            "Falcon's records live in {v} after the migration.",
            "For persistence, Falcon runs on {v} these days.",
        ),
    ),
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    data_dir = tmp_path_factory.mktemp("correction-probe") / "data"
    with mnemolog_server(data_dir) as (base_url, _), httpx.Client(base_url=base_url) as http:
        yield http


def has(value: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text, re.IGNORECASE) is not None


def post(http: httpx.Client, path: str, body: object = None) -> dict[str, object]:
    response = http.post(path, json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, object] = response.json()
    return answer


def served(http: httpx.Client, tag: str, q: str) -> list[str]:
    answer = post(http, "/search", {"q": q, "containerTag": tag, "limit": 10})
    results = answer["results"]
    assert isinstance(results, list)
    return [r["content"] for r in results]


def write(http: httpx.Client, tag: str, item: dict[str, object]) -> dict[str, object]:
    memories = post(http, "/memories", {"containerTag": tag, "memories": [item]})["memories"]
    assert isinstance(memories, list) and len(memories) == 1
    memory: dict[str, object] = memories[0]
    return memory


@pytest.mark.parametrize("depth", [1, 3, 10])
@pytest.mark.parametrize("distance", ["restatement", "loose"])
def test_explicit_corrections_are_served_forgotten_and_restored(
    client: httpx.Client, distance: str, depth: int
) -> None:
    for family, (query, values, restatement, loose) in FAMILIES.items():
        tag = f"probe-{distance}-{depth}-{family}"
        chain = values[: depth + 1]
        texts = [restatement.format(v=chain[0])] + [
            (restatement if distance == "restatement" else loose[(k - 1) % len(loose)]).format(v=v)
            for k, v in enumerate(chain)
            if k
        ]
        first = write(client, tag, {"content": texts[0]})
        assert first["status"] == "created"
        for k, text in enumerate(texts[1:], start=2):
            corrected = write(client, tag, {"content": text, "supersedes": first["id"]})
            assert (corrected["status"], corrected["id"], corrected["version"]) == (
                "superseded",
                first["id"],
                k,
            ), text
        latest, earlier = chain[-1], chain[:-1]

        results = served(client, tag, query)
        assert results and has(latest, results[0]), (family, results)
        assert not [r for r in results if any(has(v, r) for v in earlier)], (family, results)

        post(client, f"/memories/{first['id']}/forget", {"reason": "correction probe"})
        hidden = served(client, tag, query)
        assert not [r for r in hidden if any(has(v, r) for v in chain)], (family, hidden)

        post(client, f"/memories/{first['id']}/restore")
        back = served(client, tag, query)
        assert back and has(latest, back[0]), (family, back)
