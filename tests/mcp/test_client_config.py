"""``mnemolog mcp-config``: each client's snippet, launched as that client launches it, with
a ``PATH`` that does not hold the virtual environment (a desktop app's)."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from ..servers import MNEMOLOG
from .conftest import EMBEDDER, ok, session

BARE_PATH = "/usr/bin:/bin"  # no .venv/bin: `mnemolog` alone would not be found


def config(client: str, data_dir: Path) -> str:
    done = subprocess.run(
        [MNEMOLOG, "mcp-config", client, "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout


@pytest.mark.parametrize(
    ("client", "servers"), [("claude-desktop", "mcpServers"), ("cursor", "mcpServers")]
)
def test_a_pasted_snippet_launches_the_server(client: str, servers: str, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    entry = json.loads(config(client, data_dir))[servers]["mnemolog"]
    assert Path(entry["command"]).is_absolute() and Path(entry["command"]).exists()
    assert entry["args"] == ["mcp", "--data-dir", str(data_dir.resolve())]
    launched = StdioServerParameters(
        command=entry["command"],
        args=entry["args"],
        env={"PATH": BARE_PATH, "MNEMOLOG_EMBEDDER": EMBEDDER},
    )

    async def body(client: Client) -> dict[str, Any]:
        return await ok(client, "add_memory", containerTag="u1", content="Ada collects maps")

    added = session(launched, body)
    assert added["status"] == "created"


def test_the_vscode_and_claude_code_snippets_name_the_same_command(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    vscode = json.loads(config("vscode", data_dir))["servers"]["mnemolog"]
    assert vscode["type"] == "stdio"
    line = shlex.split(config("claude-code", data_dir))
    assert line[:5] == ["claude", "mcp", "add", "mnemolog", "--"]
    assert line[5:] == [vscode["command"], *vscode["args"]]
