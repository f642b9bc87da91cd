"""``search_memories`` with both clocks over the SDK's client: ``asOf`` (record time) and
``factAsOf`` (fact time) answer as ``POST /search`` does."""

from __future__ import annotations

from typing import Any

from mcp import Client

from .conftest import Served, ok, refused, session


def test_search_by_fact_time_and_record_time(served: Served) -> None:
    async def body(client: Client) -> dict[str, Any]:
        first = await ok(
            client,
            "add_memory",
            containerTag="mcp-fact",
            content="Ines works at the harbour office",
            observedAt="2024-02-01T00:00:00Z",
        )
        await ok(
            client,
            "add_memory",
            containerTag="mcp-fact",
            content="Ines works from the river office now",
            observedAt="2025-02-01T00:00:00Z",
            supersedes=first["id"],
        )

        async def contents(**when: str) -> list[str]:
            found = await ok(
                client,
                "search_memories",
                query="where does Ines work",
                containerTag="mcp-fact",
                recency=False,
                **when,
            )
            return [r["content"] for r in found["results"]]

        return {
            "now": await contents(),
            "fact_2024": await contents(factAsOf="2024-06-01"),
            "fact_2023": await contents(factAsOf="2023-06-01"),
            "record_long_ago": await contents(asOf="2020-01-01"),
            "bad": await refused(
                client, "search_memories", query="x", factAsOf="2024-06-01T00:00:00"
            ),
        }

    seen = session(served.mcp_url, body)
    assert seen["now"] == ["Ines works from the river office now"]
    assert seen["fact_2024"] == ["Ines works at the harbour office"]
    assert seen["fact_2023"] == [] and seen["record_long_ago"] == []
    assert seen["bad"]["code"] == "invalid_input"
