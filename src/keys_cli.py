"""``mnemolog keys``: make, list and revoke the API keys agents open the door with.

Each add and revoke is an event of the log (``agent.key_added``, ``agent.key_revoked``), so it
needs the data dir to itself: stop the server, change the keys, start it again. A new key's
token is printed once, on standard output, and kept nowhere: only its digest is recorded.
Listing reads the log read-only and runs beside a server. A running server revokes a key
itself (``DELETE /agents/{id}/keys/{keyId}``), all but the last live one.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import click
import msgspec

from .cli_options import data_dir_option
from .clock import iso
from .errors import DataDirLocked, InvalidInput, NotFound
from .eventlog import Actor
from .eventlog.events import AgentKeyAdded, AgentKeyRevoked
from .relay_cli import ask_server

if TYPE_CHECKING:
    from .runtime import Runtime

_CLI = Actor(agent_id="local", protocol="cli")
EXIT_LOCKED = 3
_data_dir = data_dir_option


class Listed(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One key as `keys list --json` prints it: camelCase, as the API answers."""

    key_id: str
    agent_id: str
    containers: list[str] | None
    created_at: str | None
    revoked_at: str | None = None
    admin: bool = False


@click.group("keys")
def keys_group() -> None:
    """API keys: once any key is live, every request but GET /health needs one."""


@keys_group.command("add")
@click.argument("agent")
@click.option(
    "--container",
    "containers",
    multiple=True,
    help="A container the key may read and write (repeat it; default: all of them).",
)
@click.option(
    "--admin",
    is_flag=True,
    help="The key may quarantine and roll back agents, as the user may (never scoped).",
)
@_data_dir
def add_command(
    agent: str, containers: tuple[str, ...], admin: bool, data_dir: Path | None
) -> None:
    """Make a key for AGENT and print it once.

    Beside a running server, asks that server (POST /agents/AGENT/keys, with an admin key in
    MNEMOLOG_API_KEY once keys are live): no downtime to add an agent."""
    from .replay.command import settings_of
    from .runtime import Runtime

    settings = settings_of(data_dir)
    try:
        runtime = Runtime(settings)
    except DataDirLocked:
        body = {"containers": list(containers) or None, "admin": admin}
        made = ask_server(
            settings.data_dir, "POST", f"/agents/{quote(agent, safe='')}/keys", body=body, ok=201
        )
        key_id, agent_id, token = made["keyId"], made["agentId"], made["token"]
        scoped = made["containers"]
    else:
        try:
            new = runtime.core.agents.add(agent, list(containers) or None, _CLI, admin=admin)
        except InvalidInput as exc:
            raise click.UsageError(str(exc)) from exc
        finally:
            runtime.close()
        key_id, agent_id, token, scoped = new.key_id, new.agent_id, new.token, new.containers
    scope = ", ".join(scoped) if scoped else "every container"
    click.echo(f"key {key_id} for agent {agent_id} ({scope}); shown once:", err=True)
    click.echo(token)


@keys_group.command("revoke")
@click.argument("key_id")
@_data_dir
def revoke_command(key_id: str, data_dir: Path | None) -> None:
    """Revoke a key for good (the server must be stopped)."""
    with _owned(data_dir) as runtime:
        try:
            runtime.core.agents.revoke(key_id, _CLI)
        except NotFound as exc:
            raise click.ClickException(str(exc)) from exc
    click.echo(f"revoked {key_id}", err=True)


@keys_group.command("list")
@_data_dir
@click.option("--json", "as_json", is_flag=True, help="One JSON list.")
def list_command(data_dir: Path | None, as_json: bool) -> None:
    """Every key ever made, revoked ones included (read-only, beside a server)."""
    from .replay.command import opened, settings_of

    keys: dict[str, Listed] = {}
    with opened(settings_of(data_dir)) as o:
        for stored in o.log.read():
            event = stored.record.event
            if isinstance(event, AgentKeyAdded):
                keys[event.key_id] = Listed(
                    key_id=event.key_id,
                    agent_id=event.agent_id,
                    containers=event.containers,
                    created_at=iso(stored.record.ts),
                    admin=event.admin,
                )
            elif isinstance(event, AgentKeyRevoked) and event.key_id in keys:
                keys[event.key_id] = msgspec.structs.replace(
                    keys[event.key_id], revoked_at=iso(stored.record.ts)
                )
    if as_json:
        click.echo(msgspec.json.encode(list(keys.values())).decode())
        return
    for k in keys.values():
        scope = ",".join(k.containers) if k.containers else "*"
        state = f"revoked {k.revoked_at}" if k.revoked_at else "live"
        admin = "  admin" if k.admin else ""
        click.echo(f"{k.key_id}  {k.agent_id}  {scope}  {k.created_at}  {state}{admin}")


class _owned:
    """The data dir's runtime, for a change of keys: exit 3 when a server holds it."""

    def __init__(self, data_dir: Path | None) -> None:
        self._data_dir = data_dir

    def __enter__(self) -> Runtime:
        from .replay.command import settings_of
        from .runtime import Runtime

        try:
            self._runtime = Runtime(settings_of(self._data_dir))
        except DataDirLocked as exc:
            click.echo(f"mnemolog: {exc}: stop the server to change its keys", err=True)
            sys.exit(EXIT_LOCKED)
        return self._runtime

    def __exit__(self, *_: object) -> None:
        self._runtime.close()
