"""The server's Host/Origin guard stands in front of ``/mcp`` as of every route: a foreign
``Host`` or ``Origin`` is refused before the MCP server sees the request."""

from __future__ import annotations

import httpx
import pytest

from .conftest import Served

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "door-test", "version": "1"},
    },
}
ACCEPT = {"accept": "application/json, text/event-stream"}


def post(served: Served, headers: dict[str, str]) -> httpx.Response:
    with served.rest() as rest:
        return rest.post("/mcp", json=INITIALIZE, headers={**ACCEPT, **headers})


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({"host": "evil.example"}, 421, "misdirected_host"),
        ({"origin": "http://evil.example"}, 403, "foreign_origin"),
        ({"origin": "null"}, 403, "foreign_origin"),
    ],
)
def test_a_foreign_host_or_origin_is_refused(
    served: Served, headers: dict[str, str], status: int, code: str
) -> None:
    before = served.head()
    answer = post(served, headers)
    assert answer.status_code == status
    assert answer.json()["error"]["code"] == code
    assert "mcp-session-id" not in answer.headers
    assert served.head() == before


def test_the_servers_own_origin_is_served(served: Served) -> None:
    answer = post(served, {"origin": served.base_url})
    assert answer.status_code == 200
    assert answer.json()["result"]["serverInfo"]["name"] == "mnemolog"
    assert "access-control-allow-origin" not in answer.headers
