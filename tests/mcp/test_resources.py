"""Resources (a container's profile, recent memories, recent traces) and prompts, over HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from .conftest import Served, ok, session

TAG = "res/one"  # a "/" in a tag travels percent-encoded


def test_resources_list_and_read(served: Served) -> None:
    async def body(client: Client) -> dict[str, Any]:
        await ok(client, "add_memory", content="Ana keeps bees", containerTag=TAG)
        await ok(client, "set_profile", containerTag=TAG, static=["Name: Ana"])
        await ok(client, "search_memories", query="Ana's hobby", containerTag=TAG)
        listed = [r.uri for r in (await client.list_resources()).resources]
        templates = (await client.list_resource_templates()).resource_templates
        read = {}
        for uri in ("profile/res%2Fone", "memories/res%2Fone", "traces/res%2Fone", "traces"):
            contents = (await client.read_resource(f"mnemolog://{uri}")).contents[0]
            assert contents.mime_type == "application/json"
            read[uri] = json.loads(contents.text)  # type: ignore[union-attr]
        return {"listed": listed, "templates": [t.uri_template for t in templates], **read}

    seen = session(served.mcp_url, body)
    assert {"mnemolog://memories", "mnemolog://traces", "mnemolog://profile/res%2Fone"} <= set(
        seen["listed"]
    )
    assert "mnemolog://profile/{containerTag}" in seen["templates"]
    assert seen["profile/res%2Fone"]["static"] == ["Name: Ana"]
    assert seen["memories/res%2Fone"]["memories"][0]["content"] == "Ana keeps bees"
    (trace,) = seen["traces/res%2Fone"]["traces"]
    assert (trace["query"], trace["origin"]) == ("Ana's hobby", "mcp")
    assert seen["traces"]["traces"][0]["traceId"] == trace["traceId"]


@pytest.mark.parametrize(
    ("uri", "code", "rest_code"),
    [
        ("mnemolog://nowhere/x", -32002, "not_found"),
        ("mnemolog://memories/a/b", -32002, "not_found"),
        ("file:///etc/passwd", -32002, "not_found"),
        ("mnemolog://profile", -32602, "invalid_input"),
    ],
)
def test_a_bad_resource_is_a_protocol_error_with_the_rest_code(
    served: Served, uri: str, code: int, rest_code: str
) -> None:
    async def body(client: Client) -> MCPError:
        with pytest.raises(MCPError) as raised:
            await client.read_resource(uri)
        return raised.value

    error = session(served.mcp_url, body)
    assert error.code == code and error.data["error"]["code"] == rest_code


def test_prompts(served: Served) -> None:
    async def body(client: Client) -> dict[str, Any]:
        names = [p.name for p in (await client.list_prompts()).prompts]
        recall = await client.get_prompt("recall_before_answering", {"question": "My name?"})
        with pytest.raises(MCPError, match="needs a question"):
            await client.get_prompt("recall_before_answering", {})
        with pytest.raises(MCPError, match="no prompt"):
            await client.get_prompt("nope", {})
        return {"names": names, "recall": recall.messages[0].content.text}  # type: ignore[union-attr]

    seen = session(served.mcp_url, body)
    assert seen["names"] == ["recall_before_answering", "store_what_the_user_told_you"]
    assert "search_memories" in seen["recall"] and "memory_used" in seen["recall"]
    assert seen["recall"].endswith("Question: My name?")
