"""``mnemolog review-supersedes``: the supersedes of a store that today's write decision would
not make.

A store written under an earlier rule (cosine and shared words only) may hold versions that
hid another thing's fact: "The beta service listens on port 5432" made version 2 of "The alpha
service listens on port 5432". This reads the log (read-only; a running server may hold the
data dir), judges every automatic supersede again with ``sameness.judge`` and the similarity
it recorded, and lists those judged other than the same fact, with both texts. Named
corrections (``supersedes``) and edits are never listed: a user asked for them. Nothing is
changed unless ``--apply`` is given: then each hidden version not split yet is split back into
a chain of its own (``memory.split``), as ``POST /memories/{id}/split`` does; that needs the
data dir to itself (stop the server, or make the calls through its API).
"""

from __future__ import annotations

from pathlib import Path

import click
import msgspec

from ..cli_options import data_dir_option
from ..errors import DataDirLocked, KeyDestroyed, MnemologError
from ..eventlog import Actor, EventLog, Sealer
from ..eventlog.events import (
    EmbedderPinned,
    MemoryEdited,
    MemoryImported,
    MemorySplit,
    MemorySuperseded,
    MemoryWritten,
    Sealed,
)
from ..memory.writing.sameness import Verdict, gates_for, judge
from ..settings import Settings
from .command import opened, settings_of

_CLI = Actor(agent_id="local", protocol="cli")


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    memory_id: str
    container_tag: str
    seq: int  # of the memory.superseded event
    version: int  # the version it made
    older: str  # the text it hid
    newer: str
    similarity: float
    verdict: Verdict
    reason: str
    older_version_id: str = ""  # the version it hid: what a split makes live again
    split_into: str | None = None  # the chain it was split into, if it was


class Review(msgspec.Struct, frozen=True, kw_only=True):
    automatic: int  # automatic supersedes judged
    unreadable: int  # of those, erased since: nothing left to judge
    findings: list[Finding]


def review(log: EventLog, sealer: Sealer, *, container_tag: str | None = None) -> Review:
    """Every automatic supersede of the log (of one container, if given) judged again."""
    texts: dict[str, str | None] = {}  # version id -> its text (None once erased)
    gates = None
    automatic = unreadable = 0
    findings: list[Finding] = []
    split: dict[str, str] = {}  # hidden version id -> the chain it was split into
    for stored in log.read():
        event = stored.record.event
        if isinstance(event, EmbedderPinned):
            gates = gates_for(event.name)
        elif isinstance(event, MemoryWritten | MemoryEdited | MemoryImported | MemorySplit):
            texts[event.version_id] = _open(sealer, event.content)
            if isinstance(event, MemorySplit):
                split[event.source_version_id] = event.memory_id
        elif isinstance(event, MemorySuperseded):
            newer = texts[event.version_id] = _open(sealer, event.content)
            named = event.evidence is not None and event.evidence.rule != "automatic"
            if named or (container_tag is not None and event.container_tag != container_tag):
                continue
            automatic += 1
            older = texts.get(event.supersedes_version_id)
            if older is None or newer is None or gates is None:
                unreadable += 1
                continue
            judgement = judge(older, newer, event.similarity, gates)
            if judgement.verdict != "same":
                findings.append(
                    Finding(
                        memory_id=event.memory_id,
                        container_tag=event.container_tag,
                        seq=stored.seq,
                        version=event.version,
                        older=older,
                        newer=newer,
                        similarity=event.similarity,
                        verdict=judgement.verdict,
                        reason=judgement.reason,
                        older_version_id=event.supersedes_version_id,
                    )
                )
    findings = [
        msgspec.structs.replace(f, split_into=split.get(f.older_version_id)) for f in findings
    ]
    return Review(automatic=automatic, unreadable=unreadable, findings=findings)


def _open(sealer: Sealer, sealed: Sealed) -> str | None:
    try:
        return sealer.open_text(sealed)
    except KeyDestroyed:
        return None


def render(result: Review) -> str:
    lines = []
    for f in result.findings:
        lines += [
            f"{f.memory_id} v{f.version} (seq {f.seq}, {f.container_tag}): similarity"
            f" {f.similarity:.3f}, judged {f.verdict} ({f.reason}) today",
            f"  hid:  {' '.join(f.older.split())}"
            + ("" if f.split_into is None else f"  (split into {f.split_into})"),
            f"  with: {' '.join(f.newer.split())}",
        ]
    pending = sum(1 for f in result.findings if f.split_into is None)
    lines.append(
        f"{len(result.findings)} of {result.automatic} automatic supersedes would not be made"
        f" today ({result.unreadable} erased since, not judged), {pending} not split yet"
    )
    return "\n".join(lines)


def apply_splits(settings: Settings, result: Review) -> list[tuple[Finding, str]]:
    """Split each hidden version of ``result`` not split yet; (finding, new chain) each."""
    from ..runtime import Runtime

    done: list[tuple[Finding, str]] = []
    runtime = Runtime(settings)
    try:
        for finding in result.findings:
            if finding.split_into is None:
                outcome = runtime.core.splits.split(
                    finding.memory_id, finding.older_version_id, _CLI
                )
                done.append((finding, outcome.memory_id))
    finally:
        runtime.close()
    return done


@click.command("review-supersedes")
@data_dir_option
@click.option("--container", default=None, help="Only this container.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@click.option(
    "--apply",
    is_flag=True,
    help="Split each listed version back into a chain of its own (default: a dry run that"
    " changes nothing). Needs the data dir to itself.",
)
def review_command(
    data_dir: Path | None, container: str | None, as_json: bool, apply: bool
) -> None:
    """List the automatic supersedes today's write decision would not make; with --apply,
    split the versions they hid back out."""
    settings = settings_of(data_dir)
    with opened(settings) as o:
        result = review(o.log, o.sealer, container_tag=container)
    click.echo(msgspec.json.encode(result).decode() if as_json else render(result))
    if not apply:
        return
    try:
        done = apply_splits(settings, result)
    except DataDirLocked as exc:
        raise click.ClickException(
            f"{exc}: stop the server, or split each version through its API"
            " (POST /memories/{id}/split)"
        ) from exc
    except MnemologError as exc:
        raise click.ClickException(str(exc)) from exc
    for finding, new_id in done:
        click.echo(
            f"split {finding.older_version_id} of {finding.memory_id} into {new_id}", err=True
        )
    click.echo(f"{len(done)} versions split", err=True)
