"""The ``mnemolog`` command line: thin verbs over the core.

The server is imported only by ``serve``, so ``verify-log`` runs without it.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, ClassVar

import click
import msgspec

from .banner import banner, old_store_hint
from .cli_options import data_dir_option, setting_help
from .errors import CorruptLog, DataDirLocked, EmbedderError, InvalidInput, StorageError
from .progress import Progress
from .serving import port_taken, remove_address, write_address
from .settings import Settings
from .settings_env import settings_from_env

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from .eventlog.committed import GroupCommittedLog
    from .runtime import Runtime

EXIT_CORRUPT = 1
EXIT_USAGE = 2
EXIT_LOCKED = 3
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
SHUTDOWN_GRACE_SECONDS = 5  # uvicorn takes whole seconds
GC_THRESHOLDS = (20_000, 50, 100)  # the defaults are (700, 10, 10)

_data_dir_option = data_dir_option


def _settings(**overrides: object) -> Settings:
    try:
        return settings_from_env(os.environ, **overrides)
    except InvalidInput as exc:
        raise click.UsageError(str(exc)) from exc


class _LazyGroup(click.Group):
    """Commands with heavy imports (models, indexes, the server) load only when used, so
    ``verify-log`` stays light."""

    lazy: ClassVar[dict[str, tuple[str, str]]] = {
        "add": ("mnemolog.verbs_cli", "add_command"),
        "erase": ("mnemolog.erase_cli", "erase_command"),
        "forget": ("mnemolog.verbs_cli", "forget_command"),
        "get": ("mnemolog.verbs_cli", "get_command"),
        "import": ("mnemolog.import_cli", "import_command"),
        "list": ("mnemolog.verbs_cli", "list_command"),
        "keys": ("mnemolog.keys_cli", "keys_group"),
        "mcp": ("mnemolog.mcp_server.command", "mcp_command"),
        "mcp-config": ("mnemolog.mcp_server.client_config", "mcp_config_command"),
        "migrate-log": ("mnemolog.migrate_cli", "migrate_log_command"),
        "reembed": ("mnemolog.reembed_cli", "reembed_command"),
        "replay": ("mnemolog.replay.command", "replay_command"),
        "review-supersedes": ("mnemolog.replay.review", "review_command"),
        "search": ("mnemolog.verbs_cli", "search_command"),
        "stats": ("mnemolog.verbs_cli", "stats_command"),
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            module, name = self.lazy[cmd_name]
            command = getattr(importlib.import_module(module), name)
            assert isinstance(command, click.Command)
            return command
        return super().get_command(ctx, cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mnemolog")
def main() -> None:
    """mnemolog: an auditable, event-sourced memory layer for LLM agents."""


@main.command()
@_data_dir_option
@click.option("--host", default=None, help=setting_help("host", "Address to bind"))
@click.option("--port", type=int, default=None, help=setting_help("port", "Port"))
@click.option(
    "--insecure-no-keys",
    is_flag=True,
    help="Serve an address other machines can reach although no API key is live.",
)
def serve(
    data_dir: Path | None, host: str | None, port: int | None, insecure_no_keys: bool
) -> None:
    """Run the HTTP server on the data directory."""
    settings = _settings(data_dir=data_dir, host=host, port=port)
    import uvicorn

    from .api import create_app

    busy = port_taken(settings.host, settings.port)
    if busy is not None:  # said before the store is opened (a first start may take a minute)
        click.echo(
            f"mnemolog: cannot listen on {settings.host}:{settings.port} ({busy}): pick another"
            " port with --port or MNEMOLOG_PORT",
            err=True,
        )
        sys.exit(EXIT_USAGE)
    runtime = _open_runtime(settings)
    remote = settings.host not in LOOPBACK_HOSTS
    if remote and not runtime.core.agents.required and not insecure_no_keys:
        runtime.close()
        click.echo(
            f"mnemolog: {settings.host} can be reached from other machines and no API key is"
            " live: make one (mnemolog keys add NAME), or pass --insecure-no-keys",
            err=True,
        )
        sys.exit(EXIT_USAGE)
    # What boot loaded (models, indexes, tables) lives as long as the process: the cyclic
    # collector need not scan it again, and collecting less often spares the request path.
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    write_address(settings.data_dir, settings.host, settings.port)
    live = len(runtime.core.agents.live_keys())
    identity = runtime.core.embedder.identity
    click.echo(banner(settings, embedder=identity.name, live_keys=live), err=True)
    hint = old_store_hint(settings, Path.cwd())
    if hint is not None:
        click.echo(hint, err=True)
    try:
        uvicorn.run(
            create_app(runtime),
            host=settings.host,
            port=settings.port,
            log_level="info",
            access_log=False,  # our own, one readable line per request (web/access_log.py)
            # An /events stream never ends by itself: without a bound, SIGTERM would wait for
            # its client forever (and the indexes would never be saved).
            timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        )
    finally:
        remove_address(settings.data_dir)
        runtime.close()


@main.command()
@_data_dir_option
def rebuild(data_dir: Path | None) -> None:
    """Rebuild every projection (tables and indexes) from the log.

    Projections are derived data: this wipes them and replays every record. The server must
    not be running on the data directory (exit 3 if it is).
    """
    settings = _settings(data_dir=data_dir)
    runtime = _open_runtime(settings)
    try:
        started = time.perf_counter()
        shown = Progress("rebuild", "records")
        seq = runtime.core.runner.rebuild(shown)
        shown.finish()
        elapsed = time.perf_counter() - started
    finally:
        runtime.close()
    click.echo(f"rebuilt: {seq} records replayed in {elapsed:.2f} s")


def _open_runtime(settings: Settings, progress: Progress | None = None) -> Runtime:
    from .runtime import Runtime

    os.umask(0o077)  # everything written under the data dir is private
    try:
        return Runtime(settings, progress=progress)
    except DataDirLocked as exc:
        click.echo(f"mnemolog: {exc}", err=True)
        sys.exit(EXIT_LOCKED)
    except (CorruptLog, StorageError, EmbedderError) as exc:
        click.echo(f"mnemolog: cannot open {settings.data_dir}: {exc}", err=True)
        sys.exit(EXIT_CORRUPT)


@main.command("verify-log")
@_data_dir_option
@click.argument("export", required=False, type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "--public-key",
    metavar="KEY",
    default=None,
    help="With EXPORT: require a signature by this key (base64, or its SHA256: fingerprint).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def verify_log_command(
    data_dir: Path | None, export: str | None, public_key: str | None, as_json: bool
) -> None:
    """Check the log's checksums, sequence and hash chain, or an export of it.

    Without EXPORT, checks the store's log (in the data directory, or in PostgreSQL when
    MNEMOLOG_LOG_URL names it): exits 0 when it is intact, 1 with the first bad seq when it
    is not, 2 when there is no log. Safe to run beside a live server. With EXPORT (a file
    from `mnemolog export-log`, or - for stdin), checks it as tools/verify_log.py does, and
    its signature if it is signed: exits 0 and prints the last hash (and the signing key's
    fingerprint) when it is intact, 1 with the first bad line when it is not, 2 when it
    cannot be read.
    """
    if export is not None:
        _verify_export(export, public_key, as_json)
        return
    if public_key is not None:
        raise click.UsageError("--public-key checks the signature of an EXPORT")
    from .eventlog.datadir import log_dir
    from .eventlog.verify import verify_log, verify_opened

    settings = _settings(data_dir=data_dir)
    if settings.log_url is None:
        report = verify_log(log_dir(settings.data_dir))
    else:  # the log in PostgreSQL, read beside the nodes appending to it
        from .eventlog.opening import open_log

        try:
            with open_log(settings, readonly=True) as log:
                report = verify_opened(log)
        except StorageError as exc:
            click.echo(f"mnemolog: cannot read the log: {exc}", err=True)
            sys.exit(EXIT_USAGE)
    if as_json:
        click.echo(msgspec.json.encode(report).decode())
    elif report.ok:
        click.echo(f"ok: {report.records} records, head {report.head_seq} {report.head_digest}")
    elif report.first_bad_seq is not None:
        click.echo(f"corrupt: first bad seq {report.first_bad_seq}: {report.reason}", err=True)
    else:
        click.echo(f"corrupt: {report.reason}", err=True)
    if report.ok:
        return
    sys.exit(EXIT_USAGE if report.reason and report.reason.startswith("no log") else EXIT_CORRUPT)


def _verify_export(export: str, public_key: str | None, as_json: bool) -> None:
    from .audit.export import verify_export

    try:
        if export == "-":
            report = verify_export(sys.stdin.buffer, public_key=public_key)
        else:
            with open(export, "rb") as stream:
                report = verify_export(stream, public_key=public_key)
    except InvalidInput as exc:
        raise click.UsageError(str(exc)) from exc
    except OSError as exc:
        click.echo(f"mnemolog: cannot read {export}: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    if as_json:
        click.echo(msgspec.json.encode(report).decode())
    elif report.ok:
        span = f", seq {report.from_seq}..{report.to_seq}" if report.records else ""
        signed = f", signed by {report.fingerprint}" if report.signed else ", unsigned"
        click.echo(f"ok: {report.records} records{span}, last {report.last}{signed}")
    else:
        click.echo(f"bad: line {report.first_bad_line}: {report.reason}", err=True)
    if not report.ok:
        sys.exit(EXIT_CORRUPT)


@main.command("store-key")
@_data_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print the key as JSON.")
def store_key_command(data_dir: Path | None, as_json: bool) -> None:
    """Print the public half of the store key, which signs `export-log --sign`.

    Made at its first use, in DATA-DIR/store-signing.key (mode 0600); the private half never
    leaves that file. Publish the public key or its fingerprint so that an auditor can pin
    it (`verify-log EXPORT --public-key KEY`, see docs/audit.md). Exits 2 when there is no
    log, 1 when the key cannot be read or made.
    """
    from .audit import signing

    settings = _settings(data_dir=data_dir)
    key = _store_key(settings)
    public = signing.encode_public_key(key)
    shown = signing.fingerprint(signing.public_bytes(key))
    if as_json:
        as_object = {"alg": signing.ALG, "publicKey": public, "fingerprint": shown}
        click.echo(msgspec.json.encode(as_object).decode())
    else:
        click.echo(f"{signing.ALG} {public}\n{shown}")


def _store_key(settings: Settings) -> Ed25519PrivateKey:
    """The data dir's store key (made if new); exits 2 when there is no log there."""
    from .audit.signing import store_key
    from .eventlog.datadir import log_dir

    path = log_dir(settings.data_dir)
    if not (path / "data.mdb").exists():
        click.echo(f"mnemolog: no log at {path}", err=True)
        sys.exit(EXIT_USAGE)
    try:
        return store_key(settings.data_dir)
    except StorageError as exc:
        click.echo(f"mnemolog: {exc}", err=True)
        sys.exit(EXIT_CORRUPT)


@main.command("export-log")
@_data_dir_option
@click.option("--from", "from_seq", type=int, default=None, help="First seq to export [1].")
@click.option("--to", "to_seq", type=int, default=None, help="Last seq to export [the head].")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to this file instead of stdout.",
)
@click.option(
    "--sign",
    is_flag=True,
    help="Sign the export's range with the store key (see `mnemolog store-key`).",
)
def export_log_command(
    data_dir: Path | None,
    from_seq: int | None,
    to_seq: int | None,
    output: Path | None,
    sign: bool,
) -> None:
    """Export the log as JSON Lines for outside audit.

    A header line, then one line per record with its stored bytes, hash and chain link;
    sealed fields stay ciphertext. With --sign the header also carries the store key's
    signature over the range and its last hash, so a truncated export is caught too. Check it
    with `python3 tools/verify_log.py FILE` or `mnemolog verify-log FILE` (see docs/audit.md).
    Exits 1 if the log is damaged, 2 on a bad range or when there is no log. Safe to run
    beside a live server.
    """
    from .audit.export import export_header, export_lines, sign_header
    from .eventlog.datadir import log_dir

    settings = _settings(data_dir=data_dir)
    path = log_dir(settings.data_dir)
    if settings.log_url is None and not (path / "data.mdb").exists():
        click.echo(f"mnemolog: no log at {path}", err=True)
        sys.exit(EXIT_USAGE)
    # The log alone, not the runtime: no data-dir lock, no embedder, and it never writes.
    key = _store_key(settings) if sign else None
    log = _open_log(path, settings)
    try:
        try:
            header = export_header(log, from_seq, to_seq)
        except InvalidInput as exc:
            raise click.UsageError(str(exc)) from exc
        if key is not None:
            header = sign_header(header, key)
        if output is None:
            _write_all(sys.stdout.buffer, export_lines(log, header))
        else:
            with output.open("wb") as out:
                _write_all(out, export_lines(log, header))
    except CorruptLog as exc:
        click.echo(f"mnemolog: corrupt: {exc}", err=True)
        sys.exit(EXIT_CORRUPT)
    finally:
        log.close()


def _write_all(out: BinaryIO, chunks: Iterable[bytes]) -> None:
    for chunk in chunks:
        out.write(chunk)


def _open_log(path: Path, settings: Settings) -> GroupCommittedLog:
    """The store's log (in ``path``, or in PostgreSQL when ``log_url`` is set, read-only)."""
    from .eventlog.lmdb_log import LmdbEventLog
    from .eventlog.opening import open_log

    try:
        if settings.log_url is not None:
            return open_log(settings, readonly=True)
        return LmdbEventLog(path, map_size=settings.log_map_size)
    except (CorruptLog, StorageError) as exc:
        click.echo(f"mnemolog: cannot open the log: {exc}", err=True)
        sys.exit(EXIT_CORRUPT)


@main.command()
@_data_dir_option
@click.argument("dest", type=click.Path(file_okay=False, path_type=Path))
def backup(data_dir: Path | None, dest: Path) -> None:
    """Copy the log and the key store into DEST, consistently, even while the server runs.

    LMDB compacting copies of the two stores, nothing else (projections are derived). DEST
    must be new or empty; it appears only once complete. A backup keeps the keys of every
    subject not yet erased when it is made: erasing later does not reach it. Exits 2 on a
    bad DEST or data directory, 1 if the copied log does not verify.
    """
    from .portability.backup import backup as make_backup

    settings = _settings(data_dir=data_dir)
    os.umask(0o077)
    with _copy_errors("backup"):
        manifest = make_backup(settings.data_dir, dest, say=_step("backup"))
    click.echo(f"backed up: log head {manifest.log_head_seq} {manifest.log_head_digest} to {dest}")


@main.command()
@_data_dir_option
@click.argument("src", type=click.Path(file_okay=False, path_type=Path))
def restore(data_dir: Path | None, src: Path) -> None:
    """Restore a backup made by `mnemolog backup` into an empty data directory.

    Copies the log and the key store, checks the log verifies up to the backup's head, then
    rebuilds every projection from it. Exits 2 if SRC is not a backup or the data directory
    is not empty, 1 if the log does not verify or the store cannot be opened (for instance
    with another embedder than the one the data was pinned to).
    """
    from .portability.backup import restore as restore_backup

    settings = _settings(data_dir=data_dir)
    os.umask(0o077)
    with _copy_errors("restore"):
        report = restore_backup(src, settings.data_dir, say=_step("restore"))
    started = time.perf_counter()
    shown = Progress("restore: rebuilding", "records")
    # An empty projections dir: opening folds the whole log.
    runtime = _open_runtime(settings, progress=shown)
    shown.finish()
    try:
        seq = runtime.core.runner.catch_up()
    finally:
        runtime.close()
    elapsed = time.perf_counter() - started
    click.echo(
        f"restored: {report.records} records, head {report.head_seq} {report.head_digest};"
        f" projections rebuilt to seq {seq} in {elapsed:.2f} s"
    )


def _step(verb: str) -> Callable[[str], None]:
    """Say a long command's steps on standard error, each with the time since the first."""
    started = time.perf_counter()

    def say(step: str) -> None:
        click.echo(f"{verb}: {step} ({time.perf_counter() - started:.1f} s)", err=True)

    return say


@contextmanager
def _copy_errors(verb: str) -> Iterator[None]:
    """Exit 2 on a bad argument, 1 when the copy fails or does not verify."""
    try:
        yield
    except InvalidInput as exc:
        click.echo(f"mnemolog: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    except (CorruptLog, StorageError) as exc:
        click.echo(f"mnemolog: {verb} failed: {exc}", err=True)
        sys.exit(EXIT_CORRUPT)
