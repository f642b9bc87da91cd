"""Documents end to end: chunked ingestion, listing, and the documents and hybrid search modes."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from ..servers import mnemolog_server

MANUAL = (
    "The Falcon 3 espresso machine heats up in about 25 seconds.\n\n"
    "Descaling: run the descaling programme every 200 cups, or once a month with hard water. "
    "Use citric acid, never vinegar, which damages the seals.\n\n"
    "The steam wand must be purged for two seconds before and after frothing milk."
)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    data_dir = tmp_path_factory.mktemp("documents") / "data"
    with mnemolog_server(data_dir) as (base_url, _), httpx.Client(base_url=base_url) as c:
        yield c


def test_a_document_is_chunked_listed_and_deduplicated(client: httpx.Client) -> None:
    long_text = "\n\n".join(f"Section {i}. " + "words " * 150 for i in range(6))
    posted = client.post(
        "/documents",
        json={"containerTag": "d1", "title": "Notes", "content": long_text, "metadata": {"v": 1}},
    )
    assert posted.status_code == 200, posted.text
    body = posted.json()
    assert body["status"] == "created" and body["chunks"] > 1
    again = client.post("/documents", json={"containerTag": "d1", "content": long_text}).json()
    assert (again["id"], again["status"]) == (body["id"], "deduplicated")
    listed = client.get("/documents", params={"containerTag": "d1"}).json()
    assert listed["total"] == 1 and listed["documents"][0]["title"] == "Notes"
    one = client.get(f"/documents/{body['id']}").json()
    assert one["content"] == long_text and one["metadata"] == {"v": 1}
    assert client.get("/documents/doc_nope").status_code == 404
    assert (
        client.post("/documents", json={"containerTag": "d1", "content": " \n "}).status_code == 400
    )


def test_documents_mode_finds_the_right_chunk(client: httpx.Client) -> None:
    client.post("/documents", json={"containerTag": "d2", "title": "Falcon 3", "content": MANUAL})
    found = client.post(
        "/search",
        json={"q": "how often should I descale", "containerTag": "d2", "searchMode": "documents"},
    ).json()
    top = found["results"][0]
    assert top["type"] == "document" and top["title"] == "Falcon 3"
    assert "descaling programme every 200 cups" in top["content"]
    assert MANUAL[top["start"] : top["end"]] == top["content"]
    memories_only = client.post(
        "/search", json={"q": "how often should I descale", "containerTag": "d2"}
    ).json()
    assert memories_only["results"] == []


def test_hybrid_mode_mixes_memories_and_chunks(client: httpx.Client) -> None:
    client.post("/documents", json={"containerTag": "d3", "content": MANUAL})
    client.post(
        "/memories",
        json={
            "containerTag": "d3",
            "memories": [{"content": "Jo descales her Falcon 3 with citric acid"}],
        },
    )
    found = client.post(
        "/search",
        json={"q": "descaling the Falcon 3", "containerTag": "d3", "searchMode": "hybrid"},
    )
    assert found.status_code == 200
    kinds = {r["type"] for r in found.json()["results"]}
    assert kinds == {"memory", "document"}
    trace = client.get(f"/inspect/{found.json()['traceId']}").json()
    assert trace["params"]["searchMode"] == "hybrid"
    chunks = [c for c in trace["candidates"] if c["type"] == "document"]
    assert chunks and all(c["content"] and not c["erased"] for c in chunks)
    assert {c["type"] for c in trace["candidates"]} == {"memory", "document"}
