"""Real servers for the MCP tests, and the SDK's own client to drive them.

``served``: the app under uvicorn on loopback in this process (so a test can look into its
runtime), its MCP endpoint at ``/mcp``. ``stdio_params``: ``mnemolog mcp`` as a client
launches it, a real child process.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from mnemolog.api import create_app
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

from ..servers import MNEMOLOG, app_server

T = TypeVar("T")
EMBEDDER = "quality"  # as every other real server of the tests


@dataclass
class Served:
    base_url: str
    runtime: Runtime
    data_dir: Path
    port: int

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

    def rest(self) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=30)

    def head(self) -> int:
        self.runtime.core.recall.settle()  # a recall event may land after its answer
        return self.runtime.log.head().seq

    def events(self, after: int) -> list[dict[str, Any]]:
        """What ``GET /events`` streams after seq ``after``, up to the head."""
        until = self.head()
        found: list[dict[str, Any]] = []
        if until <= after:
            return found
        with (
            self.rest() as rest,
            rest.stream("GET", "/events", params={"since": after}) as response,
        ):
            assert response.status_code == 200
            for line in response.iter_lines():
                if line.startswith("data: "):
                    found.append(json.loads(line.removeprefix("data: ")))
                    if found[-1]["seq"] >= until:
                        break
        return found


@contextmanager
def serve(data_dir: Path, **settings: Any) -> Iterator[Served]:
    runtime = Runtime(Settings(data_dir=data_dir, embedder=EMBEDDER, **settings))
    try:
        with app_server(create_app(runtime)) as base_url:
            yield Served(base_url, runtime, data_dir, int(base_url.rsplit(":", 1)[1]))
    finally:
        runtime.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serve(tmp_path_factory.mktemp("mcp") / "data") as opened:
        yield opened


def stdio_params(data_dir: Path, *args: str, **env: str) -> StdioServerParameters:
    """``mnemolog mcp`` on ``data_dir``, launched as an MCP client launches its server."""
    return StdioServerParameters(
        command=MNEMOLOG,
        args=["mcp", "--data-dir", str(data_dir), *args],
        env={"MNEMOLOG_EMBEDDER": EMBEDDER, **env},
    )


def session(
    server: str | StdioServerParameters,
    body: Callable[[Client], Awaitable[T]],
    *,
    mode: str = "auto",
) -> T:
    """Run ``body`` with the SDK's client connected to ``server`` (a URL: streamable HTTP)."""

    async def main() -> T:
        async with Client(server, mode=mode) as client:
            return await body(client)

    return anyio.run(main)


async def ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's structured answer, which must not be an error."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.structured_content
    body: dict[str, Any] = result.structured_content
    assert json.loads(result.content[0].text) == body  # type: ignore[union-attr]
    return body


async def refused(client: Client, tool: str, **arguments: Any) -> dict[str, str]:
    """A tool error's body, ``{"code", "message"}``: the REST API's."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    error: dict[str, str] = result.structured_content["error"]
    return error
