"""Erasing a container with keys live, over a real server, and `mnemolog erase` beside it: a
scoped key erases only its own containers, one another agent's key names is refused unless
forced by a key that reaches every container (a scoped key may not force, and is never told
another key's id), and the command line erases through the running server."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..servers import MNEMOLOG, mnemolog_server, settled_head
from .test_keys import add_key

ENV = {**os.environ, "MNEMOLOG_EMBEDDER": "quality"}  # as the keys were made


class Served:
    def __init__(self, base_url: str, data_dir: Path, tokens: dict[str, str]) -> None:
        self.base_url = base_url
        self.data_dir = data_dir
        self.tokens = tokens

    def client(self, agent: str) -> httpx.Client:
        headers = {"authorization": f"Bearer {self.tokens[agent]}"}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=60)

    def write(self, agent: str, tag: str, content: str) -> None:
        with self.client(agent) as client:
            body = {"containerTag": tag, "memories": [{"content": content}]}
            assert client.post("/memories", json=body).status_code == 200


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data_dir = tmp_path_factory.mktemp("erase-keys") / "data"
    tokens = {
        "dana": add_key(data_dir, "dana", "shared", "dana-own"),
        "dana-spare": add_key(data_dir, "dana", "dana-own"),  # the same agent's: not another's
        "erin": add_key(data_dir, "erin", "shared"),
        "admin": add_key(data_dir, "admin"),
    }
    with mnemolog_server(data_dir) as (base_url, _):
        yield Served(base_url, data_dir, tokens)
    assert not (data_dir / "serving.json").exists()  # removed when the server stopped


def test_a_scoped_key_erases_its_own_container_and_no_other(served: Served) -> None:
    served.write("dana", "dana-own", "Dana keeps qwdanasecret in a drawer.")
    served.write("admin", "someone-else", "Someone keeps a lamp.")
    with served.client("dana") as dana:
        with served.client("admin") as admin:
            before = settled_head(admin)
        other = dana.delete("/containers/someone-else")
        assert other.status_code == 404 and other.json()["error"]["code"] == "not_found"
        with served.client("admin") as admin:
            assert settled_head(admin) == before
        own = dana.delete("/containers/dana-own")
        assert own.status_code == 200, own.text
        assert own.json()["destroyed"]["memories"] == 1
    with served.client("admin") as admin:
        left = admin.get("/memories", params={"containerTag": "someone-else"}).json()
        assert [m["content"] for m in left["memories"]] == ["Someone keeps a lamp."]


def key_id(token: str) -> str:
    return token.split("_")[1]  # mnl_<key id>_<secret>


def test_a_container_another_agents_key_names_is_erased_only_when_forced_by_an_unscoped_key(
    served: Served,
) -> None:
    served.write("erin", "shared", "Erin keeps a kettle.")
    with served.client("admin") as admin:
        before = settled_head(admin)
    with served.client("dana") as dana:
        refused = dana.delete("/containers/shared")
        assert refused.status_code == 409, refused.text
        error = refused.json()["error"]
        assert error["code"] == "container_in_use" and "another agent" in error["message"]
        # A scoped key's force erases nothing of what another agent keeps there.
        forced = dana.delete("/containers/shared", params={"force": "true"})
        assert forced.status_code == 409, forced.text
        assert forced.json()["error"]["code"] == "container_in_use"
        # Neither answer names another agent's key.
        for answer in (refused, forced):
            assert key_id(served.tokens["erin"]) not in answer.text
    with served.client("admin") as admin:
        assert settled_head(admin) == before
    with served.client("erin") as erin:
        kept = erin.get("/memories", params={"containerTag": "shared"}).json()["memories"]
        assert [m["content"] for m in kept] == ["Erin keeps a kettle."]
    with served.client("admin") as admin:
        forced = admin.delete("/containers/shared", params={"force": "true"})
        assert forced.status_code == 200, forced.text
    with served.client("erin") as erin:
        assert erin.get("/memories", params={"containerTag": "shared"}).json()["memories"] == []


def erase(served: Served, *args: str, key: str | None) -> subprocess.CompletedProcess[str]:
    env = {**ENV, **({"MNEMOLOG_API_KEY": key} if key else {})}
    return subprocess.run(
        [MNEMOLOG, "erase", *args, "--yes", "--data-dir", str(served.data_dir)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_the_command_line_erases_through_the_running_server(served: Served) -> None:
    served.write("admin", "cli-gone", "The cli container holds qwclisecret.")
    without_key = erase(served, "--container", "cli-gone", key=None)
    assert without_key.returncode == 1
    assert json.loads(without_key.stderr)["error"]["code"] == "unauthorized"
    done = erase(served, "--container", "cli-gone", key=served.tokens["admin"])
    assert done.returncode == 0, done.stderr
    receipt = json.loads(done.stdout)
    assert receipt["containerTag"] == "cli-gone" and receipt["destroyed"]["memories"] == 1
    missing = erase(served, "--document", "doc_missing", key=served.tokens["admin"])
    assert missing.returncode == 1 and json.loads(missing.stderr)["error"]["code"] == "not_found"
    usage = erase(served, "--container", "a", "--profile", "b", key=None)
    assert usage.returncode == 2


def test_the_command_line_erases_a_stopped_server_s_data_dir(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with mnemolog_server(data_dir) as (base_url, _):
        body = {"containerTag": "u", "memories": [{"content": "U keeps qwstoppedsecret."}]}
        assert httpx.post(f"{base_url}/memories", json=body).status_code == 200
    done = subprocess.run(
        [MNEMOLOG, "erase", "--container", "u", "--yes", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["destroyed"]["memories"] == 1
    leftover = [
        p for p in data_dir.rglob("*") if p.is_file() and b"qwstoppedsecret" in p.read_bytes()
    ]
    assert leftover == []
    # Without --yes it asks, and a "no" erases nothing.
    asked = subprocess.run(
        [MNEMOLOG, "erase", "--container", "u", "--data-dir", str(data_dir)],
        input="n\n",
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    assert asked.returncode == 1 and "for good" in asked.stdout
