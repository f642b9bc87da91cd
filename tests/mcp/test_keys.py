"""API keys on /mcp, with the SDK's own client: once a key is live the endpoint needs one; the
key's agent is stamped on each call's events; a key scoped to containers reaches no other
through any tool or resource; ``mnemolog mcp`` relays with ``MNEMOLOG_MCP_API_KEY``."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mnemolog.eventlog import Actor

from ..servers import MNEMOLOG
from .conftest import Served, ok, refused, serve, session, stdio_params

ADMIN = Actor(agent_id="local", protocol="cli")


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, dict[str, str]]]:
    with serve(tmp_path_factory.mktemp("mcp-keys") / "data") as served:
        agents = served.runtime.core.agents
        tokens = {
            "alice": agents.add("alice", ["a1"], ADMIN).token,
            "bob": agents.add("bob", ["b1"], ADMIN).token,
        }
        yield served, tokens


def keyed_session(url: str, token: str | None, body: Any) -> Any:
    async def main() -> Any:
        headers = {} if token is None else {"authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport) as client:
                return await body(client)

    return anyio.run(main)


def test_without_a_key_the_endpoint_opens_nothing(keyed: tuple[Served, dict[str, str]]) -> None:
    served, _ = keyed
    before = served.head()

    async def body(client: Client) -> None:
        await client.list_tools()

    with pytest.raises(Exception):  # noqa: B017 - the SDK raises its transport's error
        keyed_session(served.mcp_url, None, body)
    with pytest.raises(Exception):  # noqa: B017
        keyed_session(served.mcp_url, "mnl_0123456789abcdef_" + "A" * 43, body)
    assert served.head() == before


def test_each_call_is_stamped_with_the_keys_agent_and_kept_in_its_containers(
    keyed: tuple[Served, dict[str, str]],
) -> None:
    served, tokens = keyed

    async def as_bob(client: Client) -> str:
        added = await ok(client, "add_memory", containerTag="b1", content="Bob's bike is blue")
        return str(added["id"])

    bobs = keyed_session(served.mcp_url, tokens["bob"], as_bob)
    before = served.head()

    async def as_alice(client: Client) -> dict[str, Any]:
        added = await ok(client, "add_memory", containerTag="a1", content="Alice's kiln is hot")
        refusals = {
            "add": await refused(client, "add_memory", containerTag="b1", content="x"),
            "search_other": await refused(
                client, "search_memories", query="bike", containerTag="b1"
            ),
            "search_all": await refused(client, "search_memories", query="bike"),
            "get": await refused(client, "get_memory", id=bobs),
            "forget": await refused(client, "forget_memory", id=bobs, reason="mine now"),
            "list_all": await refused(client, "list_memories"),
            "profile": await refused(client, "set_profile", containerTag="b1", static=["x"]),
        }
        listed = await client.list_resources()
        try:
            await client.read_resource("mnemolog://memories/b1")
            other = None
        except MCPError as exc:
            other = exc
        return {"added": added, "refusals": refusals, "listed": listed, "other": other}

    seen = keyed_session(served.mcp_url, tokens["alice"], as_alice)
    codes = {name: error["code"] for name, error in seen["refusals"].items()}
    assert codes == {
        "add": "container_forbidden",
        "search_other": "container_forbidden",
        "search_all": "container_forbidden",
        "get": "not_found",
        "forget": "not_found",
        "list_all": "container_forbidden",
        "profile": "container_forbidden",
    }
    assert seen["other"] is not None
    assert all("b1" not in str(r.uri) for r in seen["listed"].resources)
    # One write made it, stamped by the server with the key's agent; nothing refused wrote.
    records = [s.record for s in served.runtime.log.read(before + 1)]
    written = [r for r in records if r.event.__struct_config__.tag == "memory.written"]
    assert len(written) == 1 and written[0].actor == Actor(agent_id="alice", protocol="mcp")
    assert not any(r.event.__struct_config__.tag == "profile.updated" for r in records)
    chain = served.runtime.core.memories.chain(bobs)
    assert chain is not None and not chain.forgotten


def test_the_stdio_relay_sends_its_key(
    keyed: tuple[Served, dict[str, str]], tmp_path: Path
) -> None:
    served, tokens = keyed
    relayed = stdio_params(
        served.data_dir, "--port", str(served.port), MNEMOLOG_MCP_API_KEY=tokens["alice"]
    )
    before = served.head()

    async def body(client: Client) -> dict[str, Any]:
        return await ok(client, "add_memory", containerTag="a1", content="Alice's relayed note")

    added = session(relayed, body)
    assert added["status"] == "created"
    (record,) = [
        s.record
        for s in served.runtime.log.read(before + 1)
        if s.record.event.__struct_config__.tag == "memory.written"
    ]
    assert record.actor == Actor(agent_id="alice", protocol="mcp")


def test_a_session_open_when_its_key_is_revoked_is_refused_from_the_next_call(
    keyed: tuple[Served, dict[str, str]],
) -> None:
    """A long-lived MCP session lives no longer than its key: once the key is revoked, the
    same session's next call is refused at the door and writes nothing."""
    served, _ = keyed
    agents = served.runtime.core.agents
    carol = agents.add("carol", ["c1"], ADMIN)

    async def body(client: Client) -> dict[str, Any]:
        added = await ok(client, "add_memory", containerTag="c1", content="Carol's van is green")
        agents.revoke(carol.key_id, ADMIN)
        before = served.head()
        try:
            await client.call_tool("add_memory", {"containerTag": "c1", "content": "After"})
            after: Exception | None = None
        except MCPError as exc:
            after = exc
        return {"added": added, "after": after, "before": before}

    seen = keyed_session(served.mcp_url, carol.token, body)
    assert seen["added"]["id"]
    # Refused at the door (the SDK reports the 401 as an error response): the session did not
    # outlive its key.
    assert isinstance(seen["after"], MCPError)
    assert served.head() == seen["before"]


@pytest.mark.parametrize(
    ("key", "said"),
    [
        (None, "it needs an API key: set MNEMOLOG_MCP_API_KEY"),
        ("mnl_0123456789abcdef_" + "A" * 43, "it refused the key in MNEMOLOG_MCP_API_KEY"),
    ],
)
def test_a_relay_the_server_refuses_says_which_key_to_set(
    keyed: tuple[Served, dict[str, str]], key: str | None, said: str
) -> None:
    served, _ = keyed
    env = {k: v for k, v in os.environ.items() if k != "MNEMOLOG_MCP_API_KEY"}
    if key is not None:
        env["MNEMOLOG_MCP_API_KEY"] = key
    done = subprocess.run(
        [MNEMOLOG, "mcp", "--data-dir", str(served.data_dir), "--port", str(served.port)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert done.returncode == 3 and done.stdout == ""
    assert f"a mnemolog server answers at {served.mcp_url}, but {said}" in done.stderr
