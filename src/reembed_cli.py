"""``mnemolog reembed --embedder TIER``: move a data dir to another embedder.

The log is replayed into vectors of the new model (``memory/lifecycle/reembedding.py``), as
events, with
the server stopped: it takes the data dir's lock (exit 3 while a server holds it). Progress goes
to standard error. Interrupted, it resumes where it stopped when run again; until it has
finished, the server refuses to start. Then the projections fold the new vectors once, so the
next start is as quick as ever and runs the new embedder.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from .cli_options import data_dir_option
from .embedding import TIERS, Embedder, open_embedder
from .errors import DataDirLocked, EmbedderError, InvalidInput
from .eventlog import Actor
from .eventlog.datadir import DataDirLock, log_dir
from .eventlog.lmdb_log import LmdbEventLog
from .eventlog.opening import open_keys
from .eventlog.sealing import Sealer
from .memory.lifecycle.reembedding import Report, reembed
from .progress import Progress
from .settings import Settings
from .settings_env import settings_from_env

_CLI = Actor(agent_id="local", protocol="cli")
EXIT_LOCKED = 3


@click.command("reembed")
@click.option(
    "--embedder",
    "tier",
    type=click.Choice([t for t in TIERS if t != "auto"]),
    required=True,
    help="The tier to move to.",
)
@data_dir_option
def reembed_command(tier: str, data_dir: Path | None) -> None:
    """Re-embed every memory and document with TIER's model (the server must be stopped)."""
    overrides: dict[str, object] = {} if data_dir is None else {"data_dir": data_dir}
    try:
        settings = settings_from_env(os.environ, **overrides)
    except InvalidInput as exc:
        raise click.UsageError(str(exc)) from exc
    if not (log_dir(settings.data_dir) / "data.mdb").exists():
        raise click.ClickException(f"no log in {settings.data_dir}")
    try:
        embedder = open_embedder(tier, settings.model_cache, threads=settings.embedder_threads)
    except EmbedderError as exc:
        raise click.ClickException(str(exc)) from exc
    lock = DataDirLock(settings.data_dir)
    try:
        lock.acquire()
    except DataDirLocked as exc:
        click.echo(f"mnemolog: {exc}: stop the server to re-embed its data dir", err=True)
        sys.exit(EXIT_LOCKED)
    try:
        report = _run(settings, embedder, tier)
    finally:
        lock.release()
    _fold(settings)
    resumed = "" if report.started else f", resumed ({report.skipped} done before)"
    click.echo(
        f"re-embedded {report.versions} versions and {report.documents} documents with "
        f"{embedder.identity.describe()} in {report.seconds:.1f} s{resumed}; the server now "
        f"starts on it"
    )


def _run(settings: Settings, embedder: Embedder, tier: str) -> Report:
    log = LmdbEventLog(log_dir(settings.data_dir), map_size=settings.log_map_size)
    try:
        keys = open_keys(settings)
        try:
            shown = Progress(f"reembed ({tier})", "texts")
            try:
                return reembed(log, Sealer(keys), embedder, _CLI, shown)
            except InvalidInput as exc:
                raise click.ClickException(str(exc)) from exc
            finally:
                shown.finish()
        finally:
            keys.close()
    finally:
        log.close()


def _fold(settings: Settings) -> None:
    """Open the data dir once on its new embedder, so the projections fold the batches now."""
    from .runtime import Runtime

    Runtime(settings).close()
