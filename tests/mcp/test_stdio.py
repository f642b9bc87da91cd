"""``mnemolog mcp`` as a real child process, driven by the SDK's stdio client: on a data dir
of its own, and relayed to the running server that owns one; replay covers what it did."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mnemolog.eventlog import LmdbEventLog
from mnemolog.eventlog.datadir import DataDirLock, log_dir

from ..servers import MNEMOLOG, free_port, replayed_traces
from .conftest import Served, ok, refused, session, stdio_params


async def a_session(client: Client) -> dict[str, Any]:
    """The calls a client makes first, and a few of each kind."""
    tools = [t.name for t in (await client.list_tools()).tools]
    made = await ok(client, "add_memory", content="Mira takes her coffee black", containerTag="m")
    found = await ok(client, "search_memories", query="how does Mira take coffee", containerTag="m")
    await ok(client, "memory_used", traceId=found["traceId"], ids=[made["id"]])
    bad = await refused(client, "add_memory", content="x", containerTag="m", observedAt="noon")
    resource = await client.read_resource("mnemolog://memories/m")
    prompt = await client.get_prompt("store_what_the_user_told_you", {"containerTag": "m"})
    return {
        "tools": tools,
        "made": made,
        "found": found,
        "bad": bad,
        "resource": resource.contents[0].text,  # type: ignore[union-attr]
        "prompt": prompt.messages[0].content.text,  # type: ignore[union-attr]
        "protocol": client.protocol_version,
    }


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_stdio_server_on_its_own_data_dir(tmp_path: Path, mode: str) -> None:
    data_dir = tmp_path / "data"
    seen = session(stdio_params(data_dir), a_session, mode=mode)
    assert seen["protocol"] == ("2026-07-28" if mode == "auto" else "2025-11-25")
    assert "memory_used" in seen["tools"] and "delete_memory" not in seen["tools"]
    assert seen["found"]["results"][0]["id"] == seen["made"]["id"]
    assert seen["bad"]["code"] == "invalid_input" and "observedAt" in seen["bad"]["message"]
    assert "Mira takes her coffee black" in seen["resource"]
    assert 'containerTag "m"' in seen["prompt"] and "add_memory" in seen["prompt"]
    # The process has exited and released the store: its log says who did what.
    with LmdbEventLog(log_dir(data_dir), readonly=True) as log:
        records = [s.record for s in log.read()]
    kinds = [(r.kind, r.actor.protocol) for r in records if r.kind != "embedder.pinned"]
    assert kinds == [
        ("memory.written", "mcp"),
        ("recall.performed", "mcp"),
        ("recall.used", "mcp"),
    ]
    if mode == "auto":  # once is enough: the search made over stdio replays exactly
        report = replayed_traces(data_dir)
        assert (report["checked"], report["exact"], report["differs"]) == (1, 1, 0)


def test_stdio_and_http_on_one_store_see_each_others_writes(served: Served) -> None:
    """The server owns the data dir, so ``mnemolog mcp`` relays to its ``/mcp``."""
    relayed = stdio_params(served.data_dir, "--port", str(served.port))
    after = served.head()
    from_stdio = session(relayed, a_session)
    assert from_stdio["tools"] == [
        t.name for t in session(served.mcp_url, lambda c: c.list_tools()).tools
    ]

    async def over_http(client: Client) -> dict[str, Any]:
        found = await ok(client, "search_memories", query="Mira coffee", containerTag="m")
        assert found["results"][0]["id"] == from_stdio["made"]["id"]
        return await ok(
            client, "add_memory", content="Mira's desk is by the window", containerTag="m"
        )

    from_http = session(served.mcp_url, over_http)

    async def over_stdio(client: Client) -> dict[str, Any]:
        return await ok(client, "get_memory", id=from_http["id"])

    assert session(relayed, over_stdio)["versions"][0]["content"] == "Mira's desk is by the window"
    served.runtime.core.recall.settle()
    events = served.events(after)
    assert [e["kind"] for e in events] == [
        "memory.written",
        "recall.performed",
        "recall.used",
        "recall.performed",
        "memory.written",
    ]
    assert {e["actor"]["protocol"] for e in events} == {"mcp"}
    with served.rest() as rest:
        trace = rest.get(f"/inspect/{from_stdio['found']['traceId']}").json()
    assert (trace["origin"], trace["protocol"]) == ("mcp", "mcp")
    report = replayed_traces(served.data_dir)  # beside the running server
    assert report["differs"] == 0 and report["exact"] >= 2


def test_a_locked_data_dir_with_no_server_exits_3(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    port = free_port()
    with DataDirLock(data_dir):
        done = subprocess.run(
            [MNEMOLOG, "mcp", "--data-dir", str(data_dir), "--port", str(port)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 3
    assert done.stdout == ""
    assert f"no mnemolog server answers at http://127.0.0.1:{port}/mcp" in done.stderr


def raw_session(data_dir: Path, *args: str) -> tuple[list[dict[str, Any]], int, str]:
    """``mnemolog mcp`` fed JSON-RPC lines by hand; once both requests are answered, standard
    input is closed, as a client ending its session does. Its answers, exit status and
    standard error."""
    initialize = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    }
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "get_profile", "arguments": {"containerTag": "raw"}},
        },
    ]
    proc = subprocess.Popen(
        [MNEMOLOG, "mcp", "--data-dir", str(data_dir), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MNEMOLOG_EMBEDDER": "quality"},
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    answers = []
    for line in lines:
        proc.stdin.write(json.dumps(line) + "\n")
        proc.stdin.flush()
        if "id" in line:
            answers.append(json.loads(proc.stdout.readline()))
    proc.stdin.close()
    with proc.stdout, proc.stderr:
        rest = proc.stdout.read()  # nothing but answers ever reaches standard output
        code = proc.wait(timeout=30)
        errors = proc.stderr.read()
    assert rest == ""
    return answers, code, errors


def test_standard_output_carries_the_protocol_only_and_the_exit_is_clean(
    tmp_path: Path, served: Served
) -> None:
    for answers, code, stderr in (
        raw_session(tmp_path / "data"),
        raw_session(served.data_dir, "--port", str(served.port)),  # relayed
    ):
        assert code == 0 and "Traceback" not in stderr, stderr
        assert [a["id"] for a in answers] == [1, 2]
        assert answers[1]["result"]["structuredContent"]["containerTag"] == "raw"


def test_sigterm_closes_the_store_and_exits_cleanly(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    proc = subprocess.Popen(
        [MNEMOLOG, "mcp", "--data-dir", str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MNEMOLOG_EMBEDDER": "quality"},
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    with proc.stdin, proc.stdout, proc.stderr:
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        proc.stdin.write(json.dumps(ping) + "\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1  # serving, the store open
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert "Traceback" not in proc.stderr.read()
    with DataDirLock(data_dir):  # released: the store was closed
        pass
