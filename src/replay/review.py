"""``mnemolog review-supersedes``: the supersedes of a store that today's write decision would
not make.

A store written under an earlier rule (cosine and shared words only) may hold versions that
hid another thing's fact: "The beta service listens on port 5432" made version 2 of "The alpha
service listens on port 5432". This reads the log (read-only; a running server may hold the
data dir), judges every automatic supersede again with ``sameness.judge`` and the similarity
it recorded, and lists those judged other than the same fact, with both texts. Named
corrections (``supersedes``) and edits are never listed: a user asked for them. Nothing is
changed.
"""

from __future__ import annotations

from pathlib import Path

import click
import msgspec

from ..errors import KeyDestroyed
from ..eventlog import EventLog, Sealer
from ..eventlog.events import (
    EmbedderPinned,
    MemoryEdited,
    MemoryImported,
    MemorySuperseded,
    MemoryWritten,
    Sealed,
)
from ..memory.sameness import Verdict, gates_for, judge
from .command import opened, settings_of


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
    for stored in log.read():
        event = stored.record.event
        if isinstance(event, EmbedderPinned):
            gates = gates_for(event.name)
        elif isinstance(event, MemoryWritten | MemoryEdited | MemoryImported):
            texts[event.version_id] = _open(sealer, event.content)
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
                    )
                )
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
            f"  hid:  {' '.join(f.older.split())}",
            f"  with: {' '.join(f.newer.split())}",
        ]
    lines.append(
        f"{len(result.findings)} of {result.automatic} automatic supersedes would not be made"
        f" today ({result.unreadable} erased since, not judged); nothing was changed"
    )
    return "\n".join(lines)


@click.command("review-supersedes")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The data directory [env MNEMOLOG_DATA_DIR; ./data].",
)
@click.option("--container", default=None, help="Only this container.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
def review_command(data_dir: Path | None, container: str | None, as_json: bool) -> None:
    """List the automatic supersedes today's write decision would not make (read-only)."""
    with opened(settings_of(data_dir)) as o:
        result = review(o.log, o.sealer, container_tag=container)
    click.echo(msgspec.json.encode(result).decode() if as_json else render(result))
