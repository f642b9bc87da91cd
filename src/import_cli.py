"""``mnemolog import FILE``: facts from a file written through ``POST /memories``, in batches,
so the write decision (dedup, corrections, links, the poisoning detector, trust) judges each
as it judges any client's; a ``bellamente-export`` document goes to ``POST /import`` whole.

Resumable by construction: each batch is sent with an ``Idempotency-Key`` derived from its
container and its exact items, so running the command again after a crash, a kill or a lost
answer sends the same batches under the same keys, and the server answers those it already
wrote from its record of them instead of writing them again (docs/api.md, "Retrying a write").
Nothing is duplicated, and what was not written is written. A batch the server refuses whole
(one item too long, say) is sent again item by item, so one bad fact fails alone.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import click
import msgspec

from .cli_options import data_dir_option
from .client import Client, NewMemory, WriteResult
from .errors import ContainerForbidden, InvalidInput
from .portability.sources import (
    FORMATS,
    Fact,
    Format,
    Unreadable,
    count_items,
    detect_format,
    read_facts,
)
from .progress import Progress
from .verbs_cli import container_option, json_option, make_client, url_option

__all__ = ["import_command"]

EXIT_FAILED = 1
_FAILURES_SHOWN = 20


@dataclass
class Tally:
    """What became of each fact read."""

    read: int = 0
    created: int = 0
    linked: int = 0  # created, and linked to an older memory it may update
    deduplicated: int = 0
    superseded: int = 0
    replayed: int = 0  # of those, answered from an earlier run's record: not written again
    failed: list[tuple[int, str]] = field(default_factory=list)

    def count(self, result: WriteResult) -> None:
        if result.replayed:
            self.replayed += len(result.memories)
        for outcome in result.memories:
            if outcome.status == "created":
                self.created += 1
                self.linked += outcome.possibly_updates is not None
            elif outcome.status == "deduplicated":
                self.deduplicated += 1
            else:
                self.superseded += 1

    def as_json(self) -> dict[str, object]:
        return {
            "read": self.read,
            "created": self.created,
            "linked": self.linked,
            "deduplicated": self.deduplicated,
            "superseded": self.superseded,
            "replayed": self.replayed,
            "failed": [{"line": line, "reason": reason} for line, reason in self.failed],
        }


@click.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@container_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["auto", *FORMATS]),
    default="auto",
    show_default=True,
    help="jsonl, csv, mem0 (get_all() saved as JSON, or a JSON list of facts), bellamente "
    "(the export of GET /export); auto reads it off the file.",
)
@click.option(
    "--batch",
    type=click.IntRange(1, 1000),
    default=200,
    show_default=True,
    help="Facts per request. Keep it when resuming: batches are recognised by their items.",
)
@data_dir_option
@url_option
@json_option
def import_command(
    file: Path,
    container: str | None,
    fmt: str,
    batch: int,
    data_dir: Path | None,
    url: str | None,
    as_json: bool,
) -> None:
    """Import the facts of FILE into a container; run it again to resume after a failure."""
    chosen: Format = detect_format(file) if fmt == "auto" else fmt  # type: ignore[assignment]
    with make_client(data_dir, url) as client:
        if chosen == "bellamente":
            _import_export(client, file, as_json)
            return
        try:
            total = count_items(file, chosen)
        except (ValueError, UnicodeDecodeError) as exc:
            raise click.UsageError(f"{file} is not {chosen}: {exc}") from exc
        started = time.perf_counter()
        shown = Progress(f"import {file.name}", "lines" if chosen != "mem0" else "items")
        tally = Tally()
        try:
            for group_tag, facts in _batches(read_facts(file, chosen), container, batch, tally):
                _send(client, group_tag, facts, tally)
                shown(facts[-1].line, total)
        finally:
            shown.finish()
    _report(file, chosen, tally, time.perf_counter() - started, as_json)
    if tally.failed:
        sys.exit(EXIT_FAILED)


def _batches(
    read: Iterable[Fact | Unreadable], container: str | None, size: int, tally: Tally
) -> Iterator[tuple[str, list[Fact]]]:
    """Consecutive facts of one container, ``size`` at most; the unreadable are tallied."""
    tag: str | None = None
    facts: list[Fact] = []
    for item in read:
        tally.read += 1
        if isinstance(item, Unreadable):
            tally.failed.append((item.line, item.reason))
            continue
        fact_tag = container or item.container_tag
        if fact_tag is None:
            tally.failed.append((item.line, "no container: pass --container TAG"))
            continue
        if facts and (fact_tag != tag or len(facts) >= size):
            yield tag or "", facts
            facts = []
        tag = fact_tag
        facts.append(item)
    if facts:
        yield tag or "", facts


def _send(client: Client, tag: str, facts: list[Fact], tally: Tally) -> None:
    items = [_item(fact) for fact in facts]
    try:
        tally.count(client.add(items, tag, idempotency_key=_key(tag, items)))
        return
    except ContainerForbidden as exc:
        tally.failed.extend((fact.line, f"{exc.code}: {exc}") for fact in facts)
        return
    except InvalidInput as exc:
        if len(facts) == 1:
            tally.failed.append((facts[0].line, f"{exc.code}: {exc}"))
            return
    for fact, item in zip(facts, items, strict=True):  # one bad fact fails alone
        try:
            tally.count(client.add([item], tag, idempotency_key=_key(tag, [item])))
        except InvalidInput as exc:
            tally.failed.append((fact.line, f"{exc.code}: {exc}"))


def _item(fact: Fact) -> NewMemory:
    item: NewMemory = {"content": fact.content}
    if fact.observed_at is not None:
        item["observed_at"] = fact.observed_at
    if fact.metadata is not None:
        item["metadata"] = fact.metadata
    if fact.is_static:
        item["is_static"] = True
    return item


def _key(tag: str, items: list[NewMemory]) -> str:
    """The same container and items give the same key, whichever run sends them."""
    canonical = json.dumps([tag, items], sort_keys=True, ensure_ascii=False, default=str)
    return "import-" + hashlib.sha256(canonical.encode()).hexdigest()[:40]


def _import_export(client: Client, file: Path, as_json: bool) -> None:
    size = file.stat().st_size
    click.echo(f"import {file.name}: sending {size / 2**20:,.1f} MiB to POST /import", err=True)
    started = time.perf_counter()
    report = client.import_export(file.read_bytes())
    took = time.perf_counter() - started
    if as_json:
        click.echo(msgspec.json.format(msgspec.json.encode(report)).decode())
        return
    click.echo(
        f"imported {file} (bellamente-export) in {took:.1f} s: {report.imported} imported,"
        f" {report.skipped} skipped (already here, or erased), {report.failed} failed"
    )


def _report(file: Path, fmt: Format, tally: Tally, took: float, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"file": str(file), "format": fmt, **tally.as_json()}, indent=2))
        return
    rate = tally.read / took if took > 0 else 0.0
    click.echo(
        f"imported {file} ({fmt}): {tally.read:,} facts read in {took:.1f} s ({rate:,.0f}/s)\n"
        f"  created {tally.created:,} (of which linked {tally.linked:,})"
        f"  deduplicated {tally.deduplicated:,}  superseded {tally.superseded:,}"
        f"  failed {len(tally.failed):,}"
    )
    if tally.replayed:
        click.echo(
            f"  {tally.replayed:,} of them were written by an earlier run of this import:"
            " answered from its record, not written again"
        )
    for line, reason in tally.failed[:_FAILURES_SHOWN]:
        click.echo(f"  line {line}: {reason}", err=True)
    if len(tally.failed) > _FAILURES_SHOWN:
        click.echo(f"  ... and {len(tally.failed) - _FAILURES_SHOWN} more", err=True)
