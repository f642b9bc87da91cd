"""The tools answer what REST answers: the same shapes for the same memory, trace or profile,
the same error bodies for the same bad input, and the same bounds on every argument."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from mcp import Client

from mnemolog.api import models as rest
from mnemolog.mcp_server import arguments as mcp

from .conftest import Served, ok, refused, session

TAG = "parity"


def test_views_are_the_rest_views(served: Served) -> None:
    async def body(client: Client) -> dict[str, Any]:
        made = await ok(client, "add_memory", content="Ravi cycles to work", containerTag=TAG)
        await ok(client, "update_memory", id=made["id"], content="Ravi takes the train to work")
        await ok(client, "set_profile", containerTag=TAG, static=["Name: Ravi"])
        # An agent's search reranks at its own pool by default: the same operation over REST
        # is asked for explicitly, fast (rerank: false) and reranked (rerank: true).
        found = await ok(
            client, "search_memories", query="how does Ravi commute", containerTag=TAG, rerank=False
        )
        reranked = await ok(
            client, "search_memories", query="how does Ravi commute", containerTag=TAG, rerank=True
        )
        return {
            "id": made["id"],
            "search": found,
            "reranked": reranked,
            "get": await ok(client, "get_memory", id=made["id"]),
            "list": await ok(client, "list_memories", containerTag=TAG),
            "inspect": await ok(client, "inspect_trace", traceId=found["traceId"]),
            "profile": await ok(client, "get_profile", containerTag=TAG),
        }

    seen = session(served.mcp_url, body)
    with served.rest() as http:
        assert seen["get"] == http.get(f"/memories/{seen['id']}").json()
        assert (
            seen["list"] == http.get("/memories", params={"containerTag": TAG, "limit": 20}).json()
        )
        assert seen["inspect"] == http.get(f"/inspect/{seen['search']['traceId']}").json()
        assert seen["profile"] == http.get("/profile", params={"containerTag": TAG}).json()
        again = http.post("/search", json={"q": "how does Ravi commute", "containerTag": TAG})
        reranked = http.post(
            "/search", json={"q": "how does Ravi commute", "containerTag": TAG, "rerank": True}
        )
    assert seen["search"]["results"] == again.json()["results"]
    assert seen["reranked"]["results"] == reranked.json()["results"]
    assert all(hit["rerankScore"] is not None for hit in reranked.json()["results"])


@pytest.mark.parametrize(
    ("tool", "arguments", "method", "path", "payload"),
    [
        ("get_memory", {"id": "mem_nope"}, "GET", "/memories/mem_nope", None),
        ("restore_memory", {"id": "mem_nope"}, "POST", "/memories/mem_nope/restore", None),
        ("inspect_trace", {"traceId": "trc_nope"}, "GET", "/inspect/trc_nope", None),
        (
            "update_memory",
            {"id": "mem_nope", "content": "x", "observedAt": "2026-07-03T12:00:00"},
            "PATCH",
            "/memories/mem_nope",
            {"content": "x", "observedAt": "2026-07-03T12:00:00"},
        ),
        (
            "search_memories",
            {"query": "x", "asOf": "2026-07-03T12:00:00"},
            "POST",
            "/search",
            {"q": "x", "asOf": "2026-07-03T12:00:00"},
        ),
        (
            "add_memory",
            {"content": "x", "containerTag": TAG, "supersedes": "mem_nope"},
            "POST",
            "/memories",
            {"containerTag": TAG, "memories": [{"content": "x", "supersedes": "mem_nope"}]},
        ),
    ],
)
def test_errors_are_the_rest_errors(
    served: Served,
    tool: str,
    arguments: dict[str, Any],
    method: str,
    path: str,
    payload: dict[str, Any] | None,
) -> None:
    async def body(client: Client) -> dict[str, str]:
        return await refused(client, tool, **arguments)

    error = session(served.mcp_url, body)
    with served.rest() as http:
        answer = http.request(method, path, json=payload)
    assert answer.status_code >= 400
    assert {"error": error} == answer.json()


FIELDS = [
    (mcp.AddArgs, "content", rest.MemoryIn, "content"),
    (mcp.AddArgs, "containerTag", rest.WriteMemories, "containerTag"),
    (mcp.AddArgs, "context", rest.MemoryIn, "context"),
    (mcp.AddArgs, "supersedes", rest.MemoryIn, "supersedes"),
    (mcp.AddArgs, "expectedVersion", rest.MemoryIn, "expectedVersion"),
    (mcp.UpdateArgs, "content", rest.PatchMemory, "content"),
    (mcp.ForgetArgs, "reason", rest.Forget, "reason"),
    (mcp.SearchArgs, "query", rest.Search, "q"),
    (mcp.SearchArgs, "containerTag", rest.Search, "containerTag"),
    (mcp.SearchArgs, "limit", rest.Search, "limit"),
    (mcp.SetProfileArgs, "static", rest.PutProfile, "static"),
    (mcp.SetProfileArgs, "dynamic", rest.PutProfile, "dynamic"),
    (mcp.RateArgs, "grade", rest.RateResult, "grade"),
    (mcp.RateArgs, "reason", rest.RateResult, "reason"),
]
BOUNDS = ("type", "minLength", "maxLength", "minimum", "maximum", "maxItems", "items")


@pytest.mark.parametrize(("ours", "name", "theirs", "their_name"), FIELDS)
def test_argument_bounds_are_the_rest_bounds(
    ours: type[msgspec.Struct], name: str, theirs: type[msgspec.Struct], their_name: str
) -> None:
    def bounds(struct: type[msgspec.Struct], field: str) -> dict[str, Any]:
        (_, components) = msgspec.json.schema_components([struct])
        prop = components[struct.__name__]["properties"][field]
        prop = next((b for b in prop.get("anyOf", []) if b != {"type": "null"}), prop)
        items = prop.get("items", {})
        return {
            **{k: v for k, v in prop.items() if k in BOUNDS and k != "items"},
            "items": {k: v for k, v in items.items() if k in BOUNDS},
        }

    assert bounds(ours, name) == bounds(theirs, their_name)
