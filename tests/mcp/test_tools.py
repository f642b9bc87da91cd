"""Every tool and its errors, driven by the SDK's streamable HTTP client against ``/mcp`` on a
real server; each call is an event with protocol ``mcp``, and refused calls write nothing."""

from __future__ import annotations

import time
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mnemolog.clock import iso
from mnemolog.eventlog.events import RecallFeedback

from .conftest import Served, ok, refused, serve, session

TAG = "tools"


def call(served: Served, tool: str, **arguments: Any) -> dict[str, Any]:
    async def body(client: Client) -> dict[str, Any]:
        return await ok(client, tool, **arguments)

    return session(served.mcp_url, body)


def refuse(served: Served, tool: str, **arguments: Any) -> dict[str, str]:
    """The error of a refused call, which must have written nothing."""
    served.runtime.core.recall.settle()  # searches answered ahead of their commit land first
    before = served.head()

    async def body(client: Client) -> dict[str, str]:
        return await refused(client, tool, **arguments)

    error = session(served.mcp_url, body)
    served.runtime.core.recall.settle()
    assert served.head() == before, f"{tool} wrote despite refusing: {error}"
    return error


def add(served: Served, content: str, **extra: Any) -> dict[str, Any]:
    return call(served, "add_memory", content=content, containerTag=TAG, **extra)


def test_the_tools_are_listed_with_schemas_and_hints(served: Served) -> None:
    tools = {t.name: t for t in session(served.mcp_url, lambda c: c.list_tools()).tools}
    assert set(tools) == {
        "search_memories",
        "add_memory",
        "get_memory",
        "update_memory",
        "forget_memory",
        "restore_memory",
        "list_memories",
        "inspect_trace",
        "get_profile",
        "set_profile",
        "memory_used",
        "rate_result",
    }  # no delete_memory unless the setting offers it
    read_only = {n for n, t in tools.items() if t.annotations and t.annotations.read_only_hint}
    assert read_only == {
        "search_memories",
        "get_memory",
        "list_memories",
        "inspect_trace",
        "get_profile",
    }
    destructive = {n for n, t in tools.items() if t.annotations and t.annotations.destructive_hint}
    assert destructive == {"forget_memory", "set_profile"}
    for tool in tools.values():
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert tool.description and len(tool.description) > 40
        for name, prop in schema["properties"].items():
            assert "anyOf" not in prop or name == "metadata", (tool.name, name, prop)
    add_schema = tools["add_memory"].input_schema
    assert add_schema["required"] == ["content", "containerTag"]
    assert {"supersedes", "expectedVersion", "autoSupersede"} <= set(add_schema["properties"])


def test_add_then_search_get_and_list(served: Served) -> None:
    first = add(served, "Noor prefers aisle seats on long flights")
    assert first["status"] == "created" and first["version"] == 1
    assert add(served, "Noor prefers aisle seats on long flights")["status"] == "deduplicated"
    found = call(served, "search_memories", query="which seat does Noor like", containerTag=TAG)
    assert found["traceId"].startswith("trc_")
    hit = found["results"][0]
    assert hit["id"] == first["id"] and hit["type"] == "memory"
    assert hit["provenance"]["protocol"] == "mcp" and hit["validTo"] is None
    chain = call(served, "get_memory", id=first["id"])
    assert chain["latestVersion"] == 1 and chain["versions"][0]["validFrom"] is not None
    listed = call(served, "list_memories", containerTag=TAG, limit=5)
    assert first["id"] in [m["id"] for m in listed["memories"]] and listed["limit"] == 5


def test_an_explicit_correction_and_the_record_time_view(served: Served) -> None:
    old = add(served, "The spare key is in the blue drawer")
    time.sleep(0.002)
    before = iso(time.time_ns())
    time.sleep(0.002)
    new = add(served, "Ask Lou for the spare key", supersedes=old["id"], expectedVersion=1)
    assert (new["id"], new["version"], new["status"]) == (old["id"], 2, "superseded")
    assert new["reason"] == "named"
    chain = call(served, "get_memory", id=old["id"])
    first, second = chain["versions"]
    assert first["validTo"] == second["validFrom"] and second["validTo"] is None
    now = call(served, "search_memories", query="spare key", containerTag=TAG)
    assert now["results"][0]["content"] == "Ask Lou for the spare key"
    then = call(served, "search_memories", query="spare key", containerTag=TAG, asOf=before)
    assert then["results"][0]["content"] == "The spare key is in the blue drawer"
    stale = refuse(
        served, "add_memory", content="x", containerTag=TAG, supersedes=old["id"], expectedVersion=1
    )
    assert stale["code"] == "version_conflict"


def test_never_supersede_keeps_both(served: Served) -> None:
    a = add(served, "Iris lives in Porto")
    b = add(served, "Iris lives in Lisbon now", autoSupersede=False)
    assert b["status"] == "created" and b["id"] != a["id"]


def test_update_forget_and_restore(served: Served) -> None:
    made = add(served, "The team standup is at 9:30")
    edited = call(
        served, "update_memory", id=made["id"], content="The standup is at 10:00", expectedVersion=1
    )
    assert edited["latestVersion"] == 2
    conflict = refuse(served, "update_memory", id=made["id"], content="late", expectedVersion=1)
    assert conflict["code"] == "version_conflict"
    forgotten = call(served, "forget_memory", id=made["id"], reason="the user asked")
    assert forgotten["forgotten"] and forgotten["forgottenReason"] == "the user asked"
    found = call(served, "search_memories", query="standup time", containerTag=TAG)
    assert made["id"] not in [r["id"] for r in found["results"]]
    assert not call(served, "restore_memory", id=made["id"])["forgotten"]
    assert refuse(served, "forget_memory", id=made["id"])["code"] == "invalid_input"  # no reason


def test_inspect_a_search_and_report_what_was_used(served: Served) -> None:
    made = add(served, "Kai is allergic to peanuts")
    found = call(served, "search_memories", query="Kai allergy", containerTag=TAG)
    trace = call(served, "inspect_trace", traceId=found["traceId"])
    assert trace["origin"] == "mcp" and trace["protocol"] == "mcp"
    assert trace["query"] == "Kai allergy" and any(c["served"] for c in trace["candidates"])
    used = call(served, "memory_used", traceId=found["traceId"], ids=[made["id"], made["id"]])
    assert used["used"] == [made["id"]]
    (event,) = [s.record.event for s in served.runtime.log.read(used["seq"], limit=1)]
    assert event.recall_id == found["traceId"]  # type: ignore[union-attr]
    assert event.version_ids == [made["versionId"]]  # type: ignore[union-attr]
    assert call(served, "memory_used", traceId=found["traceId"], ids=[])["used"] == []
    other = add(served, "Kai plays the cello")["id"]
    unserved = refuse(served, "memory_used", traceId=found["traceId"], ids=["mem_nope", other])
    assert unserved["code"] == "invalid_input" and "did not serve" in unserved["message"]
    assert refuse(served, "memory_used", traceId="trc_nope", ids=[])["code"] == "not_found"
    assert refuse(served, "inspect_trace", traceId="trc_nope")["code"] == "not_found"


def test_rate_a_served_result(served: Served) -> None:
    made = add(served, "Kai's violin teacher is called Mira")
    other = add(served, "Kai takes the number 7 bus")["id"]
    found = call(served, "search_memories", query="Kai violin teacher", containerTag=TAG, limit=1)
    assert found["results"][0]["id"] == made["id"]
    trace_id = found["traceId"]
    rated = call(
        served, "rate_result", traceId=trace_id, id=made["id"], grade=3, reason="names her"
    )
    assert rated == {
        "traceId": trace_id,
        "versionId": made["versionId"],
        "memoryId": made["id"],
        "grade": 3,
        "seq": rated["seq"],
    }
    (stored,) = served.runtime.log.read(rated["seq"], limit=1)
    event = stored.record.event
    assert isinstance(event, RecallFeedback) and event.reason is not None
    assert (event.recall_id, event.version_id, event.grade) == (trace_id, made["versionId"], 3)
    assert served.runtime.sealer.open_text(event.reason) == "names her"
    assert stored.record.actor.protocol == "mcp"
    (given,) = call(served, "inspect_trace", traceId=trace_id)["feedback"]
    assert (given["memoryId"], given["grade"], given["protocol"]) == (made["id"], 3, "mcp")
    unserved = refuse(served, "rate_result", traceId=trace_id, id=other, grade=1)
    assert unserved["code"] == "invalid_input" and repr(other) in unserved["message"]
    for grade in (4, -1, True, "2"):
        bad = refuse(served, "rate_result", traceId=trace_id, id=made["id"], grade=grade)
        assert bad["code"] == "invalid_input", grade
    empty = refuse(served, "rate_result", traceId=trace_id, id=made["id"], grade=2, reason="")
    assert empty["code"] == "invalid_input"
    missing = refuse(served, "rate_result", traceId="trc_nope", id=made["id"], grade=2)
    assert missing["code"] == "not_found"


def test_profile_get_and_set(served: Served) -> None:
    empty = call(served, "get_profile", containerTag="profiled")
    assert empty == {"containerTag": "profiled", "static": [], "dynamic": [], "updatedAt": None}
    set_ = call(served, "set_profile", containerTag="profiled", static=["Name: Ada"])
    assert set_["static"] == ["Name: Ada"] and set_["dynamic"] == [] and set_["updatedAt"]
    assert call(served, "get_profile", containerTag="profiled") == set_
    too_many = refuse(served, "set_profile", containerTag="profiled", static=["x"] * 201)
    assert too_many["code"] == "invalid_input"


@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [
        ("add_memory", {"content": "", "containerTag": TAG}, "invalid_input"),
        ("add_memory", {"content": "x"}, "invalid_input"),
        ("add_memory", {"content": "x", "containerTag": TAG, "colour": "red"}, "invalid_input"),
        ("add_memory", {"content": 7, "containerTag": TAG}, "invalid_input"),
        ("add_memory", {"content": "nul \u0000 inside", "containerTag": TAG}, "malformed_body"),
        (
            "add_memory",
            {"content": "x", "containerTag": TAG, "observedAt": "2026-07-03T12:00:00"},
            "invalid_input",
        ),
        (
            "add_memory",
            {"content": "x", "containerTag": TAG, "expectedVersion": 1},
            "invalid_input",
        ),
        (
            "add_memory",
            {"content": "x", "containerTag": TAG, "supersedes": "mem_nope"},
            "not_found",
        ),
        ("search_memories", {"query": "x", "asOf": "2026-07-03T12:00:00"}, "invalid_input"),
        ("search_memories", {"query": "x", "limit": 0}, "invalid_input"),
        ("get_memory", {"id": "mem_nope"}, "not_found"),
        ("update_memory", {"id": "mem_nope", "content": "x"}, "not_found"),
        ("restore_memory", {"id": "mem_nope"}, "not_found"),
        ("list_memories", {"limit": 501}, "invalid_input"),
    ],
)
def test_bad_arguments_are_tool_errors_with_the_rest_codes(
    served: Served, tool: str, arguments: dict[str, Any], code: str
) -> None:
    assert refuse(served, tool, **arguments)["code"] == code


def test_an_unknown_tool_is_a_protocol_error(served: Served) -> None:
    async def body(client: Client) -> None:
        with pytest.raises(MCPError, match="Unknown tool"):
            await client.call_tool("delete_memory", {"id": "mem_x"})

    session(served.mcp_url, body)


def test_each_call_is_an_event_with_protocol_mcp(served: Served) -> None:
    after = served.head()

    async def body(client: Client) -> None:
        made = await ok(client, "add_memory", content="Zoe drinks green tea", containerTag=TAG)
        await ok(client, "update_memory", id=made["id"], content="Zoe drinks jasmine tea")
        found = await ok(client, "search_memories", query="what does Zoe drink", containerTag=TAG)
        await ok(client, "memory_used", traceId=found["traceId"], ids=[made["id"]])
        await ok(client, "rate_result", traceId=found["traceId"], id=made["id"], grade=2)
        await ok(client, "forget_memory", id=made["id"], reason="test")
        await ok(client, "restore_memory", id=made["id"])
        await ok(client, "set_profile", containerTag=TAG, dynamic=["Testing MCP"])

    session(served.mcp_url, body)
    served.runtime.core.recall.settle()
    events = served.events(after)
    assert [e["kind"] for e in events] == [
        "memory.written",
        "memory.edited",
        "recall.performed",
        "recall.used",
        "recall.feedback",
        "chain.forgotten",
        "chain.restored",
        "profile.updated",
    ]
    assert {(e["actor"]["agentId"], e["actor"]["protocol"]) for e in events} == {("local", "mcp")}
    with served.rest() as rest:
        traces = rest.get("/inspect", params={"origin": "mcp", "limit": 1}).json()["traces"]
    assert traces[0]["query"] == "what does Zoe drink" and traces[0]["protocol"] == "mcp"


def test_hard_delete_only_when_the_setting_offers_it(tmp_path: Any) -> None:
    with serve(tmp_path / "data", mcp_hard_delete=True) as opened:

        async def body(client: Client) -> None:
            names = [t.name for t in (await client.list_tools()).tools]
            assert "delete_memory" in names
            (delete,) = [t for t in (await client.list_tools()).tools if t.name == "delete_memory"]
            assert delete.annotations is not None and delete.annotations.destructive_hint
            made = await ok(client, "add_memory", content="Temporary fact", containerTag="d")
            gone = await ok(client, "delete_memory", id=made["id"])
            assert gone["hardDeleted"] and gone["erased"]
            again = await refused(client, "delete_memory", id=made["id"])
            assert again["code"] == "key_destroyed"
            chain = await ok(client, "get_memory", id=made["id"])
            assert chain["erased"] and chain["versions"][0]["content"] is None
            assert {"erase_container", "erase_document", "erase_profile"} <= set(names)
            await ok(client, "add_memory", content="Kept for a while", containerTag="e")
            await ok(client, "set_profile", containerTag="e", static=["Likes tea"])
            profile = await ok(client, "erase_profile", containerTag="e")
            assert profile["erased"]
            receipt = await ok(client, "erase_container", containerTag="e")
            assert receipt["destroyed"]["memories"] == 1 and not receipt["destroyed"]["profile"]
            again = await ok(client, "erase_container", containerTag="e")
            assert again["repeated"] and again["seq"] == receipt["seq"]
            missing = await refused(client, "erase_document", documentId="doc_missing")
            assert missing["code"] == "not_found"

        session(opened.mcp_url, body)


def test_a_failing_tool_is_a_tool_error_and_the_server_goes_on(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(**_: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(served.runtime.core.memories, "list_latest", broken)
    assert refuse(served, "list_memories") == {
        "code": "internal_error",
        "message": "the tool failed",
    }
    monkeypatch.undo()
    assert call(served, "list_memories", limit=1)["limit"] == 1
