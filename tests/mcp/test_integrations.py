"""The snippets of docs/integrations.md work as written: each MCP configuration parses and the
server it names answers ``initialize`` and ``tools/list`` (launched, or reached over HTTP);
the Python clients get an answer through the proxy; the proxy's settings are valid."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from mnemolog.settings_env import settings_from_env

from ..proxy.scripted import ScriptedUpstream
from ..servers import MNEMOLOG, app_server
from .conftest import EMBEDDER, Served, serve, session

PAGE = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
DATA_DIR = "/home/you/.local/share/mnemolog"
DEFAULT_MCP_URL = "http://127.0.0.1:8080/mcp"
DEFAULT_V1 = "http://127.0.0.1:8080/v1"


def blocks(language: str) -> list[str]:
    pattern = re.compile(rf"^```{language}\n(.*?)^```$", re.MULTILINE | re.DOTALL)
    return pattern.findall(PAGE.read_text(encoding="utf-8"))


def mcp_servers() -> list[tuple[str, dict[str, Any]]]:
    """Each server entry of each JSON snippet, with the snippet's number."""
    found = []
    for number, block in enumerate(blocks("json"), start=1):
        config = json.loads(block)
        (servers,) = [config[k] for k in ("mcpServers", "servers") if k in config]
        found += [(f"json-{number}-{name}", entry) for name, entry in servers.items()]
    return found


def claude_code_commands() -> list[list[str]]:
    return [
        shlex.split(line)
        for block in blocks("sh")
        for line in block.splitlines()
        if line.startswith("claude mcp add")
    ]


def launched(argv: list[str], env: dict[str, str], data_dir: Path) -> StdioServerParameters:
    """A snippet's command as a client would launch it, on the test's data dir."""
    command, *args = [a.replace(DATA_DIR, str(data_dir)) for a in argv]
    assert command == "mnemolog"
    env = {k: v.replace(DATA_DIR, str(data_dir)) for k, v in env.items()}
    return StdioServerParameters(
        command=MNEMOLOG, args=args, env={"MNEMOLOG_EMBEDDER": EMBEDDER, **env}
    )


def tool_names(server: str | StdioServerParameters) -> list[str]:
    async def body(client: Client) -> list[str]:
        return [t.name for t in (await client.list_tools()).tools]

    return session(server, body)


CLIENTS = ("Claude Desktop", "Claude Code", "Cursor", "VS Code", "`openai`", "LangChain", "Ollama",
           "llama.cpp", "Open WebUI")  # fmt: skip


def test_the_page_has_every_client() -> None:
    headings = re.findall(r"^### (.*)$", PAGE.read_text(encoding="utf-8"), re.MULTILINE)
    for client in CLIENTS:
        assert any(client in heading for heading in headings), client
    assert len(mcp_servers()) == 6 and len(claude_code_commands()) == 2


@pytest.mark.parametrize(("label", "entry"), mcp_servers(), ids=[s[0] for s in mcp_servers()])
def test_each_mcp_snippet_starts_a_server_that_answers(
    label: str, entry: dict[str, Any], tmp_path: Path, served: Served
) -> None:
    if "url" in entry:
        assert entry["url"] == DEFAULT_MCP_URL and entry.get("type", "http") == "http"
        names = tool_names(served.mcp_url)  # the same path, on the test server's port
    else:
        assert entry.get("type", "stdio") == "stdio"
        argv = [entry["command"], *entry["args"]]
        names = tool_names(launched(argv, entry.get("env", {}), tmp_path / "data"))
    assert "search_memories" in names and "add_memory" in names


def test_the_claude_code_commands(tmp_path: Path, served: Served) -> None:
    stdio, http = claude_code_commands()
    assert stdio[:4] == ["claude", "mcp", "add", "mnemolog"] and stdio[4] == "--"
    assert "memory_used" in tool_names(launched(stdio[5:], {}, tmp_path / "data"))
    assert http[-1] == DEFAULT_MCP_URL and http[3:5] == ["--transport", "http"]


@pytest.fixture(scope="module")
def proxy_v1(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    upstream = ScriptedUpstream()
    with app_server(upstream.app) as upstream_url:
        data_dir = tmp_path_factory.mktemp("integrations") / "data"
        with serve(data_dir, upstream_base_url=f"{upstream_url}/v1") as opened:
            yield f"{opened.base_url}/v1"


@pytest.mark.parametrize("library", ["openai", "langchain_openai"])
def test_each_python_snippet_gets_an_answer_through_the_proxy(proxy_v1: str, library: str) -> None:
    pytest.importorskip(library)
    (code,) = [b for b in blocks("py") if f"from {library} import" in b]
    assert DEFAULT_V1 in code
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(
            compile(code.replace(DEFAULT_V1, proxy_v1), f"integrations.md ({library})", "exec"), {}
        )
    assert printed.getvalue().strip() == "Hello from the scripted upstream."


def test_the_upstream_settings_of_the_sh_snippets_are_valid() -> None:
    found = [
        word
        for block in blocks("sh")
        for word in shlex.split(block.replace("\\\n", " "))
        if word.startswith("MNEMOLOG_")
    ]
    assert len(found) == 2
    for assignment in found:
        name, _, value = assignment.partition("=")
        assert settings_from_env({name: value}).upstream_base_url == value
    assert f"OPENAI_API_BASE_URL={DEFAULT_V1}" in "".join(blocks("sh"))  # Open WebUI
