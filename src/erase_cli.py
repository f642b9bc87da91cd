"""``mnemolog erase``: erase a whole container (a user), one document or one profile, for good.

With the server stopped it opens the data dir itself; while a server runs on it (the data dir
is locked), it asks that server, at the address the server wrote into the data dir when it
started (``serving.json``), with the key in ``MNEMOLOG_API_KEY`` when keys are live. Either
way the erasure is the server's own (``DELETE /containers/{tag}`` and its siblings) and
answers the same JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import click

from .cli_options import data_dir_option
from .errors import DataDirLocked, MnemologError
from .relay_cli import ask_server, fail
from .web.statuses import error_body


@click.command("erase")
@click.option("--container", "container_tag", default=None, help="Erase this container (a user).")
@click.option("--document", "document_id", default=None, help="Erase this document.")
@click.option("--profile", "profile_tag", default=None, help="Erase this container's profile.")
@click.option(
    "--force",
    is_flag=True,
    help="Erase a container although another agent's key is scoped to it.",
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@data_dir_option
def erase_command(
    container_tag: str | None,
    document_id: str | None,
    profile_tag: str | None,
    force: bool,
    yes: bool,
    data_dir: Path | None,
) -> None:
    """Destroy a container, a document or a profile for good: nothing can bring it back.

    Beside a running server, asks that server (with the key in MNEMOLOG_API_KEY once keys
    are live). Prints the answer as JSON. Exits 1 when it was refused or not found (the error
    on standard error), 2 on a usage error.
    """
    chosen = [
        (kind, value)
        for kind, value in (
            ("container", container_tag),
            ("document", document_id),
            ("profile", profile_tag),
        )
        if value is not None
    ]
    if len(chosen) != 1:
        raise click.UsageError("name exactly one of --container, --document or --profile")
    kind, target = chosen[0]
    if not yes:
        click.confirm(f"Erase {kind} {target!r} for good? Nothing can bring it back", abort=True)
    from .replay.command import settings_of

    settings = settings_of(data_dir)
    try:
        answer = _erase_here(settings.data_dir, kind, target, force)
    except DataDirLocked:
        answer = _erase_through_server(settings.data_dir, kind, target, force)
    click.echo(json.dumps(answer, indent=2))


def _erase_here(data_dir: Path, kind: str, target: str, force: bool) -> dict[str, object]:
    """The erasure, by this process (no server holds the data dir)."""
    from .memory.agents import LOCAL
    from .replay.command import settings_of
    from .runtime import Runtime
    from .views import erasure_json

    runtime = Runtime(settings_of(data_dir))
    try:
        erasure = runtime.core.erasure
        if kind == "container":
            return erasure_json(erasure.container(target, LOCAL, force=force, protocol="cli"))
        if kind == "document":
            seq = erasure.document(target, LOCAL, protocol="cli")
            return {"id": target, "erased": True, "seq": seq}
        seq = erasure.profile(target, LOCAL, protocol="cli")
        return {"containerTag": target, "erased": True, "seq": seq}
    except MnemologError as exc:
        fail(error_body(exc))
    finally:
        runtime.close()


def _erase_through_server(data_dir: Path, kind: str, target: str, force: bool) -> dict[str, object]:
    """The erasure, asked of the server that holds the data dir."""
    path, params = {
        "container": (f"/containers/{quote(target, safe='')}", {"force": str(force).lower()}),
        "document": (f"/documents/{quote(target, safe='')}", {}),
        "profile": ("/profile", {"containerTag": target}),
    }[kind]
    return ask_server(data_dir, "DELETE", path, params=params)
