"""``mnemolog mcp``: the MCP server over stdio, for agent tools that launch their servers."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import anyio
import click

from ..cli_options import data_dir_option, setting_help
from ..errors import CorruptLog, EmbedderError, InvalidInput, StorageError
from ..settings import Settings
from ..settings_env import settings_from_env
from .stdio import ServerUnreachable, run_stdio

EXIT_CORRUPT = 1
EXIT_LOCKED = 3  # as ``serve`` exits on a locked data dir
GC_THRESHOLDS = (20_000, 50, 100)  # as ``serve`` collects (``cli.py``)


@click.command("mcp")
@data_dir_option
@click.option(
    "--host",
    default=None,
    help=setting_help("host", "Where the server owning the data dir listens, to relay to"),
)
@click.option("--port", type=int, default=None, help=setting_help("port", "Its port"))
def mcp_command(data_dir: Path | None, host: str | None, port: int | None) -> None:
    """Serve the Model Context Protocol on stdin and stdout.

    For agent tools that launch their MCP server (Claude Desktop, Claude Code, Cursor, VS
    Code): the same tools, resources and prompts as the running server's /mcp endpoint. It
    opens the data directory itself; when `mnemolog serve` already owns it, every call is
    relayed to that server's /mcp, at the --host and --port it was started with, so the one
    process that owns the store serves and records it. Exits when the client closes stdin;
    exit 3 when the data directory is in use and no server answers there, 1 when the store
    cannot be opened. See docs/mcp.md.
    """
    settings = _settings(data_dir=data_dir, host=host, port=port)
    os.umask(0o077)  # everything written under the data dir is private
    # As for ``serve``: what boot loads lives as long as the process, so collect less often.
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        anyio.run(run_stdio, settings)
    except ServerUnreachable as exc:
        click.echo(f"mnemolog: {exc}", err=True)
        sys.exit(EXIT_LOCKED)
    except (CorruptLog, StorageError, EmbedderError) as exc:
        click.echo(f"mnemolog: cannot open {settings.data_dir}: {exc}", err=True)
        sys.exit(EXIT_CORRUPT)


def _settings(**overrides: object) -> Settings:
    try:
        return settings_from_env(os.environ, **overrides)
    except InvalidInput as exc:
        raise click.UsageError(str(exc)) from exc
