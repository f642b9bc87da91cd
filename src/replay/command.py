"""``mnemolog replay``: what was believed, recalled and injected, folded again from the log.

It opens the log and the key store read-only, so it runs beside a live server; the log is
read as it stood when the command started. Projections are folded in a scratch folder inside
the data dir (they hold memory text) and deleted afterwards.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click
import msgspec

from ..cli_options import data_dir_option
from ..clock import iso, parse_as_of_instant
from ..embedding import (
    CrossEncoder,
    Embedder,
    check_pin,
    open_for_store,
    reranker_folder,
)
from ..errors import CorruptLog, EmbedderError, InvalidInput, StorageError
from ..eventlog import Actor, EventLog, Sealer
from ..eventlog.datadir import log_dir
from ..eventlog.events import EmbedderPinned, ReembedStarted
from ..eventlog.lmdb_log import LmdbEventLog
from ..eventlog.opening import open_keys
from ..eventlog.scratch import scratch_root
from ..memory import MemoriesAt, RecallRequest, World, scores_at, trust_params
from ..settings import Settings
from ..settings_env import settings_from_env
from .believed import agents_then, believed, render_belief
from .diff import changes_between, render_changes
from .fidelity import FidelityReport, check_traces
from .timeline import seq_at

EXIT_DIFFERS = 1
EXIT_UNUSABLE = 2
_REPLAY = Actor(agent_id="replay", protocol="cli")  # never recorded: a replay appends nothing


class Opened(msgspec.Struct, frozen=True):
    log: EventLog
    sealer: Sealer


def settings_of(data_dir: Path | None) -> Settings:
    """The settings of a read-only command on ``data_dir``; a bad variable is a usage error."""
    try:
        return settings_from_env(os.environ, data_dir=data_dir)
    except InvalidInput as exc:
        raise click.UsageError(str(exc)) from exc


@contextmanager
def opened(settings: Settings) -> Iterator[Opened]:
    """The log and the keys of the data dir, read-only."""
    if not (log_dir(settings.data_dir) / "data.mdb").exists():
        raise click.ClickException(f"no log in {settings.data_dir}")
    try:
        log = LmdbEventLog(log_dir(settings.data_dir), readonly=True)
    except (CorruptLog, StorageError) as exc:
        raise click.ClickException(f"cannot open the log: {exc}") from exc
    try:
        keys = open_keys(settings, readonly=True)
    except BaseException:
        log.close()
        raise
    try:
        yield Opened(log, Sealer(keys))
    finally:
        keys.close()
        log.close()


def pinned_embedder(settings: Settings, log: EventLog, at: int | None = None) -> Embedder:
    """The embedder the log was pinned to at seq ``at`` (the last, if None): its first pin,
    or the target of a re-embedding started by then (the configured tier, if one is set,
    must be it)."""
    pins = _pins(log)
    pin = next((p for seq, p in reversed(pins) if at is None or seq <= at), None)
    if pin is None and pins:
        pin = pins[0][1]
    embedder = open_for_store(settings.embedder, pin, settings.model_cache, threads=1)
    if pin is not None:
        check_pin(pin, embedder.identity)
    return embedder


def embedders_by_position(settings: Settings, log: EventLog) -> Callable[[int], Embedder]:
    """The embedder in force at each seq, opened once each: a data dir re-embedded since a
    trace was recorded is checked with the embedder it had then."""
    opened: dict[int, Embedder] = {}
    starts = [seq for seq, _ in _pins(log)] or [0]

    def at(seq: int) -> Embedder:
        start = max((s for s in starts if s <= seq), default=starts[0])
        if start not in opened:
            opened[start] = pinned_embedder(settings, log, start)
        return opened[start]

    return at


def _pins(log: EventLog) -> list[tuple[int, EmbedderPinned]]:
    """Each pin of the log with its seq: the first one, then each re-embedding's target."""
    pins: list[tuple[int, EmbedderPinned]] = []
    for stored in log.read():
        event = stored.record.event
        if isinstance(event, EmbedderPinned) and not pins:
            pins.append((stored.seq, event))
        elif isinstance(event, ReembedStarted):
            pin = EmbedderPinned(name=event.name, dimension=event.dimension, digest=event.digest)
            pins.append((stored.seq, pin))
    return pins


def instant(text: str, option: str) -> int:
    try:
        return parse_as_of_instant(text)
    except InvalidInput as exc:
        raise click.BadParameter(str(exc), param_hint=option) from exc


def as_of(
    settings: Settings,
    moment: str,
    *,
    container: str | None,
    query: str | None,
    limit: int,
    as_json: bool,
) -> None:
    at = instant(moment, "--as-of")
    with opened(settings) as o:
        seq = seq_at(o.log, at)
        scratch = scratch_root(settings.data_dir)
        if query is not None:
            _query_at(settings, o, seq, at, query, container, limit, as_json)
            return
        state = MemoriesAt.nearest(o.log, o.sealer, scratch, seq, settings.data_dir / "snapshots")
        try:
            belief = believed(state.path, as_of_ns=at, seq=seq, container_tag=container)
        finally:
            state.close()
        scores = scores_at(o.log, scratch, seq, trust_params(settings))
        belief = msgspec.structs.replace(belief, agents=agents_then(scores, settings))
    click.echo(msgspec.json.encode(belief).decode() if as_json else render_belief(belief))


def _query_at(
    settings: Settings,
    o: Opened,
    seq: int,
    at: int,
    query: str,
    container: str | None,
    limit: int,
    as_json: bool,
) -> None:
    embedder = pinned_embedder(settings, o.log, seq)
    world = World(
        o.log, o.sealer, embedder, scratch_root(settings.data_dir), trust=trust_params(settings)
    )
    try:
        world.advance(seq)
        result = world.recall.search(
            RecallRequest(q=query, container_tag=container, limit=limit),
            origin="rest",
            actor=_REPLAY,
            durable=False,
        )
    finally:
        world.close()
    rows = [
        {
            "rank": n,
            "id": hit.row.memory_id,
            "version": hit.row.version,
            "content": hit.row.content,
            "context": hit.row.context,
            "score": round(hit.score, 6),
            "similarity": round(hit.similarity, 6),
        }
        for n, hit in enumerate(result.hits, start=1)
        if hit.row is not None
    ]
    if as_json:
        click.echo(msgspec.json.encode({"asOf": iso(at), "seq": seq, "results": rows}).decode())
        return
    click.echo(f"as of {iso(at)} (log seq {seq}), {query!r}: {len(rows)} results")
    for r in rows:
        replied = f"  (in reply to: {r['context']})" if r["context"] is not None else ""
        click.echo(
            f"  {r['rank']}. {r['score']:.6f}  {r['id']} v{r['version']}  {r['content']}{replied}"
        )


def fidelity(
    settings: Settings, *, trace_ids: list[str] | None, sample: int | None, as_json: bool
) -> FidelityReport:
    with opened(settings) as o:
        report = check_traces(
            o.log,
            o.sealer,
            embedders_by_position(settings, o.log),
            scratch_root(settings.data_dir),
            only=trace_ids,
            sample=sample,
            # Opened only if a reranked trace is checked.
            reranker=CrossEncoder(
                reranker_folder(settings.model_cache), threads=settings.embedder_threads
            ),
            trust=trust_params(settings),
        )
    if as_json:
        click.echo(msgspec.json.encode(report).decode())
    else:
        for check in report.traces:
            line = f"  {check.trace_id}  seq {check.seq}  {check.origin:<7} {check.status}"
            click.echo(line + (f": {'; '.join(check.reasons)}" if check.reasons else ""))
        figure = "-" if report.fidelity is None else f"{report.fidelity:.1%}"
        click.echo(
            f"{report.checked} traces: {report.exact} reproduced exactly, {report.differs}"
            f" differ, {report.unverifiable} unverifiable (see their reasons); fidelity {figure}"
        )
    return report


def diff(
    settings: Settings, first: str, second: str, *, container: str | None, as_json: bool
) -> None:
    start, end = instant(first, "--diff"), instant(second, "--diff")
    if end < start:
        raise click.BadParameter("the second instant is before the first", param_hint="--diff")
    with opened(settings) as o:
        changes = changes_between(
            o.log, seq_at(o.log, start), seq_at(o.log, end), container_tag=container
        )
    if as_json:
        click.echo(msgspec.json.encode(changes).decode())
    else:
        click.echo(f"from {iso(start)} to {iso(end)}: {len(changes)} changes")
        click.echo(render_changes(changes))


@click.command("replay")
@data_dir_option
@click.option(
    "--as-of", "as_of_text", metavar="T", help="What was believed at T (date or instant)."
)
@click.option("--query", metavar="Q", help="With --as-of: what recall would have served for Q.")
@click.option("--container", metavar="TAG", help="Only this container.")
@click.option("--limit", type=click.IntRange(1, 100), default=10, show_default=True)
@click.option("--trace", "trace_id", metavar="ID", help="Re-derive one recorded trace.")
@click.option("--check-traces", "check", is_flag=True, help="Re-derive every recorded trace.")
@click.option("--sample", type=click.IntRange(1), help="With --check-traces: only N of them.")
@click.option("--diff", "diff_range", nargs=2, metavar="T1 T2", help="What changed from T1 to T2.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def replay_command(
    data_dir: Path | None,
    as_of_text: str | None,
    query: str | None,
    container: str | None,
    limit: int,
    trace_id: str | None,
    check: bool,
    sample: int | None,
    diff_range: tuple[str, str] | None,
    as_json: bool,
) -> None:
    """Fold the log again: the state as of T, a query then, a trace's fidelity, a diff.

    Runs beside a live server (the log and keys are opened read-only). Exit status: 0, or
    1 when a re-derived trace differs from its record, 2 when the embedder is not the pinned
    one.
    """
    settings = settings_of(data_dir)
    chosen = [as_of_text is not None, trace_id is not None, check, bool(diff_range)]
    if sum(chosen) != 1:
        raise click.UsageError("give one of --as-of, --trace, --check-traces, --diff")
    if query is not None and as_of_text is None:
        raise click.UsageError("--query needs --as-of")
    try:
        if as_of_text is not None:
            as_of(
                settings, as_of_text, container=container, query=query, limit=limit, as_json=as_json
            )
        elif diff_range:
            diff(settings, *diff_range, container=container, as_json=as_json)
        else:
            report = fidelity(
                settings,
                trace_ids=None if trace_id is None else [trace_id],
                sample=sample,
                as_json=as_json,
            )
            if trace_id is not None and report.checked == 0:
                raise click.ClickException(f"no trace {trace_id!r} in the log")
            if report.differs:
                sys.exit(EXIT_DIFFERS)
    except EmbedderError as exc:
        click.echo(f"mnemolog: {exc}", err=True)
        sys.exit(EXIT_UNUSABLE)
