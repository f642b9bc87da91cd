"""The terminal verbs over the REST API: ``add``, ``search``, ``list``, ``get``, ``forget`` and
``stats``. Each asks the server the data dir is served by, or serves the data dir itself for
the length of the command (``reach.py``); ``--json`` prints the API's answer for scripts.

A refusal prints the error's code and message on standard error and exits 1.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar, cast

import click
import msgspec

from .cli_options import data_dir_option
from .client import (
    Chain,
    Client,
    MemoryHit,
    MemoryPage,
    SearchMode,
    SearchResult,
    Stats,
    WriteResult,
)
from .errors import DataDirLocked, MnemologError
from .reach import reach
from .settings_env import settings_from_env

__all__ = [
    "add_command",
    "container_option",
    "forget_command",
    "get_command",
    "json_option",
    "list_command",
    "make_client",
    "search_command",
    "stats_command",
    "url_option",
]

EXIT_FAILED = 1
_TEXT_WIDTH = 100  # a memory's text on one line of a listing

T = TypeVar("T")

url_option = click.option(
    "--url",
    default=None,
    metavar="URL",
    help="The server to ask [env MNEMOLOG_URL; default: the one running on the data dir, "
    "else the data dir opened by this command].",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
container_option = click.option(
    "--container", "-c", "container", default=None, metavar="TAG", help="The container (a user)."
)


@contextmanager
def make_client(data_dir: Path | None, url: str | None) -> Iterator[Client]:
    """A client of the server to ask; a refusal or an unreachable server ends the command."""
    try:
        settings = settings_from_env(os.environ, data_dir=data_dir)
    except MnemologError as exc:
        raise click.UsageError(str(exc)) from exc
    try:
        with reach(settings, url) as client:
            yield client
    except DataDirLocked as exc:
        click.echo(f"mnemolog: {exc}", err=True)
        sys.exit(EXIT_FAILED)
    except MnemologError as exc:
        click.echo(f"mnemolog: {exc.code}: {exc}", err=True)
        sys.exit(EXIT_FAILED)


def _run(
    data_dir: Path | None,
    url: str | None,
    as_json: bool,
    call: Callable[[Client], T],
    show: Callable[[T], None],
) -> None:
    with make_client(data_dir, url) as client:
        answer = call(client)
    if as_json:
        click.echo(msgspec.json.format(msgspec.json.encode(answer)).decode())
    else:
        show(answer)


def _line(text: str | None) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= _TEXT_WIDTH else flat[: _TEXT_WIDTH - 1] + "…"


@click.command("add")
@click.argument("texts", nargs=-1, required=True)
@container_option
@click.option("--static", is_flag=True, help="A standing fact, served first (isStatic).")
@click.option("--observed-at", default=None, metavar="T", help="When the fact was true (ISO).")
@data_dir_option
@url_option
@json_option
def add_command(
    texts: tuple[str, ...],
    container: str | None,
    static: bool,
    observed_at: str | None,
    data_dir: Path | None,
    url: str | None,
    as_json: bool,
) -> None:
    """Write each TEXT as a memory of the container (POST /memories)."""
    if container is None:
        raise click.UsageError("name the container: --container TAG")
    tag = container

    def show(result: WriteResult) -> None:
        for outcome in result.memories:
            said = f"{outcome.status} {outcome.id} v{outcome.version}"
            if outcome.possibly_updates:
                said += f" (possibly updates {outcome.possibly_updates})"
            if outcome.flagged:
                said += f" flagged: {', '.join(outcome.flags)}"
            click.echo(said)

    _run(
        data_dir,
        url,
        as_json,
        lambda c: c.add(
            list(texts), tag, is_static=True if static else None, observed_at=observed_at
        ),
        show,
    )


@click.command("search")
@click.argument("query")
@container_option
@click.option("--limit", "-n", type=click.IntRange(1, 100), default=10, show_default=True)
@click.option("--mode", type=click.Choice(["memories", "documents", "hybrid"]), default="memories")
@data_dir_option
@url_option
@json_option
def search_command(
    query: str,
    container: str | None,
    limit: int,
    mode: str,
    data_dir: Path | None,
    url: str | None,
    as_json: bool,
) -> None:
    """Search memories (or documents) by meaning and words (POST /search)."""

    def show(result: SearchResult) -> None:
        for hit in result.results:
            if isinstance(hit, MemoryHit):
                click.echo(f"{hit.rank:>3}. {hit.score:.3f}  {hit.id}  {_line(hit.content)}")
            else:
                where = f"{hit.document_id}#{hit.chunk_index}"
                click.echo(f"{hit.rank:>3}. {hit.score:.3f}  {where}  {_line(hit.content)}")
        if not result.results:
            click.echo("no results")
        click.echo(f"trace {result.trace_id}: GET /inspect/{result.trace_id} shows every candidate")

    _run(
        data_dir,
        url,
        as_json,
        lambda c: c.search(query, container, limit=limit, search_mode=cast(SearchMode, mode)),
        show,
    )


@click.command("list")
@container_option
@click.option("--limit", "-n", type=click.IntRange(1, 500), default=20, show_default=True)
@click.option("--offset", type=click.IntRange(0), default=0)
@click.option("--forgotten", is_flag=True, help="Include forgotten memories.")
@data_dir_option
@url_option
@json_option
def list_command(
    container: str | None,
    limit: int,
    offset: int,
    forgotten: bool,
    data_dir: Path | None,
    url: str | None,
    as_json: bool,
) -> None:
    """The latest version of each memory, newest first (GET /memories)."""

    def show(page: MemoryPage) -> None:
        for memory in page.memories:
            mark = " (forgotten)" if memory.forgotten else ""
            click.echo(f"{memory.id} v{memory.version}  {_line(memory.content)}{mark}")
        shown = len(page.memories)
        first = page.offset + 1 if shown else page.offset
        click.echo(f"{first}-{page.offset + shown} of {page.total}")

    _run(
        data_dir,
        url,
        as_json,
        lambda c: c.list(container, include_forgotten=forgotten, limit=limit, offset=offset),
        show,
    )


def _show_chain(chain: Chain) -> None:
    state = (
        f"forgotten ({chain.forgotten_reason})"
        if chain.forgotten
        else "erased"
        if chain.erased
        else "live"
    )
    click.echo(f"{chain.id}  container {chain.container_tag}  {state}")
    for version in chain.versions:
        window = f"{version.valid_from or '?'} .. {version.valid_to or 'now'}"
        static = " static" if version.is_static else ""
        click.echo(f"  v{version.version}  {window}{static}  {_line(version.content)}")
    for link in chain.possibly_updates:
        click.echo(f"  possibly updates {link.id}")
    for link in chain.possibly_updated_by:
        click.echo(f"  possibly updated by {link.id}")


@click.command("get")
@click.argument("memory_id")
@data_dir_option
@url_option
@json_option
def get_command(memory_id: str, data_dir: Path | None, url: str | None, as_json: bool) -> None:
    """One memory with every version (GET /memories/ID)."""
    _run(data_dir, url, as_json, lambda c: c.get(memory_id), _show_chain)


@click.command("forget")
@click.argument("memory_id")
@click.option("--reason", required=True, help="Why: kept with the memory, which can be restored.")
@data_dir_option
@url_option
@json_option
def forget_command(
    memory_id: str, reason: str, data_dir: Path | None, url: str | None, as_json: bool
) -> None:
    """Forget a memory, reversibly: search no longer serves it (POST /memories/ID/forget).
    To destroy it for good: mnemolog erase."""
    _run(data_dir, url, as_json, lambda c: c.forget(memory_id, reason), _show_chain)


@click.command("stats")
@container_option
@data_dir_option
@url_option
@json_option
def stats_command(
    container: str | None, data_dir: Path | None, url: str | None, as_json: bool
) -> None:
    """How much the store, or one container, holds (GET /stats)."""

    def show(stats: Stats) -> None:
        scope = f"container {stats.container_tag}" if stats.container_tag else "every container"
        click.echo(f"{scope}: {stats.containers} container(s), log head {stats.log.head}")
        for status, count in stats.memories.items():
            click.echo(f"  {status:<12} {count:>10,}")
        click.echo(f"  {'documents':<12} {stats.documents:>10,}")

    _run(data_dir, url, as_json, lambda c: c.stats(container), show)
