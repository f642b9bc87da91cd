"""Splitting a wrongly merged version back into a chain of its own, over a real server: the
hidden fact is served again, both chains name each other, bad splits are refused with nothing
written, and erasing either chain afterwards erases exactly its own text (through a rebuild of
every projection from the log, too)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..servers import MNEMOLOG, mnemolog_server, replayed_traces, settled_head

ENV = {"MNEMOLOG_EMBEDDER": "quality"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    data_dir = tmp_path_factory.mktemp("split") / "data"
    with mnemolog_server(data_dir) as (base_url, _), httpx.Client(base_url=base_url) as client:
        yield client, data_dir


def written(client: httpx.Client, tag: str, item: dict[str, object]) -> dict[str, object]:
    response = client.post("/memories", json={"containerTag": tag, "memories": [item]})
    assert response.status_code == 200, response.text
    memory: dict[str, object] = response.json()["memories"][0]
    return memory


def merged(client: httpx.Client, tag: str, older: str, newer: str) -> dict[str, object]:
    """A chain where ``newer`` hid ``older``, as the legacy rule did (here by naming it)."""
    first = written(client, tag, {"content": older})
    second = written(client, tag, {"content": newer, "supersedes": first["id"]})
    assert second["status"] == "superseded"
    chain: dict[str, object] = client.get(f"/memories/{first['id']}").json()
    return chain


def served(client: httpx.Client, tag: str, q: str) -> list[str]:
    response = client.post("/search", json={"q": q, "containerTag": tag, "limit": 10})
    assert response.status_code == 200, response.text
    return [r["content"] for r in response.json()["results"]]


def head(client: httpx.Client) -> int:
    return settled_head(client)


def versions(chain: dict[str, object]) -> list[dict[str, object]]:
    rows = chain["versions"]
    assert isinstance(rows, list)
    return rows


def test_a_split_serves_the_hidden_fact_again_as_its_own_chain(
    server: tuple[httpx.Client, Path],
) -> None:
    client, _ = server
    chain = merged(
        client,
        "s-live",
        "The alpha service listens on port 5432",
        "The beta service listens on port 5432",
    )
    assert served(client, "s-live", "which port does the alpha service use") == [
        "The beta service listens on port 5432"
    ]
    hidden = versions(chain)[0]
    response = client.post(
        f"/memories/{chain['id']}/split", json={"versionId": hidden["versionId"]}
    )
    assert response.status_code == 201, response.text
    new = response.json()
    assert new["id"] != chain["id"]
    assert new["splitFrom"] == {"id": chain["id"], "versionId": hidden["versionId"]}
    assert [v["content"] for v in versions(new)] == ["The alpha service listens on port 5432"]
    assert versions(new)[0]["provenance"]["kind"] == "memory.split"
    source = client.get(f"/memories/{chain['id']}").json()
    assert source["splitInto"] == [{"id": new["id"], "versionId": hidden["versionId"]}]
    # The source keeps its history as it was: the log is never rewritten.
    assert [v["content"] for v in versions(source)] == [
        "The alpha service listens on port 5432",
        "The beta service listens on port 5432",
    ]
    assert sorted(served(client, "s-live", "which port does the alpha service use")) == [
        "The alpha service listens on port 5432",
        "The beta service listens on port 5432",
    ]


@pytest.mark.parametrize(
    ("target", "body", "status", "code"),
    [
        ("unknown", {"versionId": "ver_nope"}, 404, "not_found"),
        ("chain", {"versionId": "ver_nope"}, 404, "not_found"),
        ("chain", {"versionId": "other"}, 404, "not_found"),
        ("chain", {"versionId": "head"}, 409, "nothing_to_split"),
        ("chain", {}, 400, "invalid_input"),
        ("chain", {"versionId": "hidden", "extra": 1}, 400, "invalid_input"),
        ("chain", {"versionId": 7}, 400, "invalid_input"),
    ],
)
def test_a_bad_split_is_refused_and_writes_nothing(
    server: tuple[httpx.Client, Path],
    target: str,
    body: dict[str, object],
    status: int,
    code: str,
) -> None:
    client, _ = server
    chain = merged(client, "s-bad", "Room Velaro seats twelve", "Room Quintos seats twelve")
    other = merged(client, "s-bad-2", "Gate 4 opens at six", "Gate 9 opens at six")
    names = {
        "hidden": versions(chain)[0]["versionId"],
        "head": versions(chain)[-1]["versionId"],
        "other": versions(other)[0]["versionId"],
    }
    if body.get("versionId") in names:
        body = {**body, "versionId": names[str(body["versionId"])]}
    memory_id = "mem_unknown" if target == "unknown" else chain["id"]
    before = head(client)
    response = client.post(f"/memories/{memory_id}/split", json=body)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code
    assert head(client) == before


def test_a_version_is_split_once_and_an_erased_chain_not_at_all(
    server: tuple[httpx.Client, Path],
) -> None:
    client, _ = server
    chain = merged(client, "s-twice", "Locker 12 holds the drill", "Locker 31 holds the drill")
    hidden = versions(chain)[0]["versionId"]
    first = client.post(f"/memories/{chain['id']}/split", json={"versionId": hidden})
    assert first.status_code == 201
    before = head(client)
    again = client.post(f"/memories/{chain['id']}/split", json={"versionId": hidden})
    assert again.status_code == 409 and first.json()["id"] in again.json()["error"]["message"]
    assert client.delete(f"/memories/{chain['id']}").status_code == 200
    after_erase = head(client)
    gone = client.post(f"/memories/{chain['id']}/split", json={"versionId": hidden})
    assert gone.status_code == 410 and gone.json()["error"]["code"] == "key_destroyed"
    assert head(client) == after_erase and after_erase == before + 1
    # The split chain holds its own copy: erasing the source left it whole.
    kept = client.get(f"/memories/{first.json()['id']}").json()
    assert [v["content"] for v in versions(kept)] == ["Locker 12 holds the drill"]


def data_dir_holds(data_dir: Path, needle: bytes) -> list[Path]:
    return [p for p in data_dir.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_erasing_a_split_chain_erases_its_text_from_the_source_and_nothing_else(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    older = "The canary-split-7731 kiosk accepts coins"
    newer = "The lantern-split-2210 kiosk accepts coins"
    with mnemolog_server(data_dir, ENV) as (base_url, _), httpx.Client(base_url=base_url) as c:
        chain = merged(c, "s-erase", older, newer)
        c.post(f"/memories/{chain['id']}/forget", json={"reason": "checking the kiosks"})
        c.post(f"/memories/{chain['id']}/restore")
        hidden = versions(chain)[0]["versionId"]
        split = c.post(f"/memories/{chain['id']}/split", json={"versionId": hidden}).json()
        assert served(c, "s-erase", "which kiosk accepts coins")
        assert c.delete(f"/memories/{split['id']}").status_code == 200
        source = c.get(f"/memories/{chain['id']}").json()
        assert [v["content"] for v in versions(source)] == [None, newer]
        assert served(c, "s-erase", "which kiosk accepts coins") == [newer]
        # The source lives on: it can still be changed, under its new key.
        edited = c.patch(
            f"/memories/{chain['id']}", json={"content": "The lantern-split-2210 kiosk is closed"}
        )
        assert edited.status_code == 200, edited.text
        assert data_dir_holds(data_dir, b"canary-split-7731") == []
        assert replayed_traces(data_dir)["differs"] == 0

    # Every projection rebuilt from the log: the erased text stays gone, the rest is read
    # through the re-sealed fields.
    subprocess.run(
        [MNEMOLOG, "rebuild", "--data-dir", str(data_dir)],
        check=True,
        capture_output=True,
        env={**os.environ, **ENV},
    )
    with mnemolog_server(data_dir, ENV) as (base_url, _), httpx.Client(base_url=base_url) as c:
        source = c.get(f"/memories/{chain['id']}").json()
        assert [v["content"] for v in versions(source)] == [
            None,
            newer,
            "The lantern-split-2210 kiosk is closed",
        ]
        assert source["forgottenReason"] is None and not source["forgotten"]
        assert served(c, "s-erase", "which kiosk is closed") == [
            "The lantern-split-2210 kiosk is closed"
        ]
    assert data_dir_holds(data_dir, b"canary-split-7731") == []
    verified = subprocess.run(
        [MNEMOLOG, "verify-log", "--data-dir", str(data_dir)], capture_output=True, text=True
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_every_recall_of_this_module_is_reproduced_by_replay(
    server: tuple[httpx.Client, Path],
) -> None:
    _, data_dir = server
    report = replayed_traces(data_dir)
    assert report["differs"] == 0 and report["checked"], report


def test_an_export_keeps_the_split_and_an_import_restores_it(
    server: tuple[httpx.Client, Path], tmp_path: Path
) -> None:
    client, _ = server
    chain = merged(client, "s-export", "Bay 3 charges the red van", "Bay 8 charges the red van")
    hidden = versions(chain)[0]["versionId"]
    split = client.post(f"/memories/{chain['id']}/split", json={"versionId": hidden}).json()
    exported = client.get("/export", params={"containerTag": "s-export"}).json()
    by_id = {c["id"]: c for c in exported["memories"]}
    assert by_id[split["id"]]["splitFrom"] == {"id": chain["id"], "versionId": hidden}
    # Back into the store it came from: nothing is written.
    before = head(client)
    again = client.post("/import", json=exported)
    assert again.status_code == 200 and again.json()["imported"] == 0
    assert head(client) == before

    with (
        mnemolog_server(tmp_path / "other") as (base_url, _),
        httpx.Client(base_url=base_url) as other,
    ):
        report = other.post("/import", json=exported).json()
        new_id = {m["sourceId"]: m["id"] for m in report["memories"]}
        copy = other.get(f"/memories/{new_id[split['id']]}").json()
        source = other.get(f"/memories/{new_id[chain['id']]}").json()
        assert copy["splitFrom"] == {
            "id": source["id"],
            "versionId": versions(source)[0]["versionId"],
        }
        assert source["splitInto"] == [
            {"id": copy["id"], "versionId": versions(source)[0]["versionId"]}
        ]
