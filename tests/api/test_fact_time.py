"""Searching by fact time (``factAsOf``): of each memory, the version observed last at or
before the instant, by what is known now or at ``asOf``; replayed exactly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..servers import mnemolog_server, replayed_traces


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    data_dir = tmp_path_factory.mktemp("fact-time") / "data"
    with mnemolog_server(data_dir) as (base_url, _), httpx.Client(base_url=base_url) as client:
        yield client, data_dir


def served(client: httpx.Client, **query: object) -> list[str]:
    body = {"q": "where does Hana live", "containerTag": "f1", "recency": False, **query}
    response = client.post("/search", json=body)
    assert response.status_code == 200, response.text
    return [r["content"] for r in response.json()["results"]]


def test_fact_time_serves_what_was_true_then(server: tuple[httpx.Client, Path]) -> None:
    client, _ = server
    first = client.post(
        "/memories",
        json={
            "containerTag": "f1",
            "memories": [{"content": "Hana lives in Osaka", "observedAt": "2024-01-10T00:00:00Z"}],
        },
    ).json()["memories"][0]
    moved = client.post(
        "/memories",
        json={
            "containerTag": "f1",
            "memories": [
                {
                    "content": "Hana lives in Kyoto now",
                    "observedAt": "2025-03-01T00:00:00Z",
                    "supersedes": first["id"],
                }
            ],
        },
    ).json()["memories"][0]
    assert moved["status"] == "superseded"
    recorded = client.get(f"/memories/{first['id']}").json()["versions"][1]["validFrom"]

    assert served(client) == ["Hana lives in Kyoto now"]
    assert served(client, factAsOf="2024-06-01") == ["Hana lives in Osaka"]
    assert served(client, factAsOf="2025-06-01") == ["Hana lives in Kyoto now"]
    assert served(client, factAsOf="2023-01-01") == []  # nothing was known to be true yet
    # Both clocks: at a record time before the correction, only Osaka was known.
    before_the_correction = recorded.replace("Z", "+00:00")
    assert served(client, factAsOf="2025-06-01", asOf="2020-01-01") == []
    assert served(client, factAsOf="2025-06-01", asOf=before_the_correction) == [
        "Hana lives in Kyoto now"
    ]


@pytest.mark.parametrize("value", ["2024-06-01T00:00:00", "yesterday", 20240601, ""])
def test_a_bad_fact_time_is_a_400_and_appends_nothing(
    server: tuple[httpx.Client, Path], value: object
) -> None:
    client, _ = server
    client.get("/inspect", params={"limit": 1})  # the searches' traces are committed by now
    before = client.get("/health").json()["log"]["head"]
    response = client.post("/search", json={"q": "x", "factAsOf": value})
    assert response.status_code == 400, response.text
    assert "factAsOf" in response.json()["error"]["message"]
    assert client.get("/health").json()["log"]["head"] == before


def test_fact_time_searches_replay_exactly(server: tuple[httpx.Client, Path]) -> None:
    _, data_dir = server
    report = replayed_traces(data_dir)
    assert report["differs"] == 0 and report["checked"], report
