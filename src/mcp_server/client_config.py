"""``mnemolog mcp-config CLIENT``: the snippet that registers mnemolog in an MCP client, with
the absolute path of this installation's ``mnemolog`` and of the data dir.

A desktop client launches its servers with its own ``PATH``, which seldom holds a virtual
environment's ``bin``, and does not expand ``~``: a snippet naming ``mnemolog`` alone fails to
launch. This one names what this very command was run as.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path

import click

from ..cli_options import data_dir_option
from ..settings_env import settings_from_env

CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode")


def executable() -> str:
    """The absolute path of the ``mnemolog`` command of this installation."""
    beside = Path(sys.executable).parent / "mnemolog"
    if beside.exists():
        return str(beside.absolute())
    found = shutil.which("mnemolog")
    return str(Path(found).absolute()) if found else str(Path(sys.argv[0]).absolute())


def snippet(client: str, command: str, data_dir: Path) -> str:
    """What to paste into ``client``'s configuration (for Claude Code, a command to run)."""
    args = ["mcp", "--data-dir", str(data_dir)]
    if client == "claude-code":
        return shlex.join(["claude", "mcp", "add", "mnemolog", "--", command, *args])
    server: dict[str, object] = {"command": command, "args": args}
    if client == "vscode":
        return json.dumps({"servers": {"mnemolog": {"type": "stdio", **server}}}, indent=2)
    return json.dumps({"mcpServers": {"mnemolog": server}}, indent=2)


@click.command("mcp-config")
@click.argument("client", type=click.Choice(CLIENTS))
@data_dir_option
def mcp_config_command(client: str, data_dir: Path | None) -> None:
    """Print the snippet that registers mnemolog in CLIENT, with absolute paths.

    For claude-desktop (claude_desktop_config.json), cursor (~/.cursor/mcp.json) and vscode
    (.vscode/mcp.json): the JSON to paste. For claude-code: the command to run.
    """
    settings = settings_from_env(os.environ, data_dir=data_dir)
    click.echo(snippet(client, executable(), settings.data_dir.resolve()))
