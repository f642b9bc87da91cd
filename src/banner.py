"""What ``mnemolog serve`` says once the store is open: where it is, what it runs, where to go.

One block on standard error, before the server takes requests, so a person starting it sees
the data dir's absolute path, the embedder, whether keys are required, and the URL of each
door (the dashboard, the REST API and its docs, the OpenAI-compatible proxy, MCP).
"""

from __future__ import annotations

from pathlib import Path

from . import __version__
from .serving import base_url
from .settings import Settings

# Where the data dir defaulted to before it became the user's data home.
_OLD_DEFAULT = Path("data")


def banner(settings: Settings, *, embedder: str, live_keys: int) -> str:
    """The start-up block; ``embedder`` names the embedder in force, ``live_keys`` how many
    keys open the door (none: every loopback caller is the local agent)."""
    url = base_url(settings.host, settings.port)
    auth = (
        f"required ({live_keys} live key{'s' if live_keys != 1 else ''})"
        if live_keys
        else "none: open to callers on this machine (mnemolog keys add NAME to require keys)"
    )
    upstream = settings.upstream_base_url or "none set (MNEMOLOG_UPSTREAM_BASE_URL)"
    lines = [
        f"mnemolog {__version__}",
        f"  data dir    {settings.data_dir.resolve()}",
        f"  embedder    {settings.embedder} tier: {embedder}",
        f"  auth        {auth}",
        f"  dashboard   {url}/ui",
        f"  REST API    {url}  (reference: {url}/docs)",
        f"  proxy       {url}/v1  (upstream: {upstream})",
        f"  MCP         {url}/mcp",
    ]
    return "\n".join(lines)


def old_store_hint(settings: Settings, cwd: Path) -> str | None:
    """A line for a store left in ``./data``, where the data dir defaulted to once, when this
    server runs elsewhere: its memories are not lost, only not served."""
    old = cwd / _OLD_DEFAULT
    if not (old / "log").is_dir() or old.resolve() == settings.data_dir.resolve():
        return None
    return (
        f"  note        {old} holds a mnemolog store, and this server uses another; serve it"
        f" with --data-dir {old} (or MNEMOLOG_DATA_DIR)"
    )
