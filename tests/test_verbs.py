"""The terminal verbs (``add``, ``search``, ``list``, ``get``, ``forget``, ``stats``) as a
person runs them: real processes, over a running server found through its data dir, or on a
data dir no server holds."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .servers import MNEMOLOG, mnemolog_server

ENV = {"MNEMOLOG_EMBEDDER": "fast"}


def run(data_dir: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [MNEMOLOG, *args, "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **ENV},
        check=False,
    )
    if ok:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def answer(data_dir: Path, *args: str) -> dict[str, object]:
    found: dict[str, object] = json.loads(run(data_dir, *args, "--json").stdout)
    return found


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    data_dir = tmp_path_factory.mktemp("verbs") / "data"
    with mnemolog_server(data_dir, ENV) as (base_url, _):
        yield data_dir, base_url


def test_every_verb_over_the_running_server(served: tuple[Path, str]) -> None:
    data_dir, base_url = served
    written = answer(data_dir, "add", "Ada prefers green tea", "Ada lives in Lyon", "-c", "ada")
    outcomes = written["memories"]
    assert isinstance(outcomes, list) and [m["status"] for m in outcomes] == ["created"] * 2
    tea = outcomes[0]["id"]
    # The server wrote them: what it serves holds them.
    listed = httpx.get(f"{base_url}/memories", params={"containerTag": "ada"}).json()
    assert {m["id"] for m in listed["memories"]} == {m["id"] for m in outcomes}

    again = run(data_dir, "add", "Ada prefers green tea", "-c", "ada").stdout
    assert again.startswith(f"deduplicated {tea} v1")

    found = answer(data_dir, "search", "green tea", "-c", "ada", "-n", "1")
    results = found["results"]
    assert isinstance(results, list) and results[0]["id"] == tea
    assert str(found["traceId"]).startswith("trc_")
    said = run(data_dir, "search", "green tea", "-c", "ada").stdout
    assert "  1. " in said and tea in said.splitlines()[0] and "trace trc_" in said

    page = answer(data_dir, "list", "-c", "ada")
    assert page["total"] == 2
    assert run(data_dir, "list", "-c", "ada").stdout.splitlines()[-1] == "1-2 of 2"

    chain = answer(data_dir, "get", tea)
    assert chain["id"] == tea and chain["containerTag"] == "ada"
    assert "v1  " in run(data_dir, "get", tea).stdout

    forgotten = answer(data_dir, "forget", tea, "--reason", "she switched to coffee")
    assert forgotten["forgotten"] is True
    assert answer(data_dir, "list", "-c", "ada")["total"] == 1

    stats = answer(data_dir, "stats", "-c", "ada")
    assert stats["memories"] == {
        "live": 1,
        "superseded": 0,
        "forgotten": 1,
        "flagged": 0,
        "quarantined": 0,
    }
    assert "forgotten" in run(data_dir, "stats").stdout


def test_a_refusal_is_said_with_its_code_and_exits_1(served: tuple[Path, str]) -> None:
    data_dir, _ = served
    missing = run(data_dir, "get", "mem_nothing_here", ok=False)
    assert missing.returncode == 1 and "not_found" in missing.stderr
    blank = run(data_dir, "add", " ", "-c", "ada", ok=False)
    assert blank.returncode == 1 and "invalid_input" in blank.stderr
    unnamed = run(data_dir, "add", "a fact", ok=False)
    assert unnamed.returncode == 2 and "--container" in unnamed.stderr


def test_without_a_server_the_verb_opens_the_data_dir_and_lets_it_go(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    written = answer(data_dir, "add", "Bo keeps bees in Ghent", "-c", "bo")
    memories = written["memories"]
    assert isinstance(memories, list) and memories[0]["status"] == "created"
    found = answer(data_dir, "search", "bees", "-c", "bo")
    results = found["results"]
    assert isinstance(results, list) and results[0]["content"] == "Bo keeps bees in Ghent"
    assert not (data_dir / "cli.sock").exists()
    # Released: a server starts on it and serves what the verb wrote.
    with mnemolog_server(data_dir, ENV) as (base_url, _):
        listed = httpx.get(f"{base_url}/memories", params={"containerTag": "bo"}).json()
    assert [m["content"] for m in listed["memories"]] == ["Bo keeps bees in Ghent"]


def test_a_url_that_answers_nothing_is_named(tmp_path: Path) -> None:
    done = run(tmp_path, "stats", "--url", "http://127.0.0.1:9", ok=False)
    assert done.returncode == 1 and "http://127.0.0.1:9" in done.stderr


def test_a_data_dir_too_deep_for_a_socket_is_served_all_the_same(tmp_path: Path) -> None:
    data_dir = tmp_path / ("deep" * 12) / ("deeper" * 8) / "data"
    assert len(str(data_dir / "cli.sock")) > 108
    written = answer(data_dir, "add", "Cy sails a dinghy", "-c", "cy")
    memories = written["memories"]
    assert isinstance(memories, list) and memories[0]["status"] == "created"
