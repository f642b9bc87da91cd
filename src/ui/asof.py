"""``/ui/asof``: what a container's memory held at an instant, and what changed between two.

The instant is a position in the log (a seq), picked on a slider over the log's history (its
ends dated) or by a date (the last position at or before it), and shown as the record time
there. What was believed is folded from the log up to it, starting
from the nearest snapshot (``replay --as-of`` does the same); the changes between two
instants are the log's own records between them, each with its agent.
"""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ..clock import parse_as_of_instant
from ..errors import InvalidInput
from ..eventlog.scratch import scratch_root
from ..memory import MemoriesAt
from ..replay.believed import Belief, believed
from ..replay.diff import Change, changes_between
from ..replay.timeline import seq_at
from ..runtime import Runtime
from .pages import Pages
from .snippets import Snippets

MAX_CHANGES = 500  # changes a diff page lists, newest last
SHOWN = 200  # memories a page lists of each instant's belief


def asof_pages(runtime: Runtime, pages: Pages) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    core = runtime.core

    @router.get("/ui/asof")
    async def asof(
        request: Request,
        container: Annotated[str | None, Query(max_length=256)] = None,
        at: Annotated[int | None, Query(ge=0, le=2**63 - 1)] = None,
        when: Annotated[str | None, Query(max_length=40)] = None,
        to: Annotated[str | None, Query(max_length=20)] = None,
        page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    ) -> Response:
        caller = pages.caller(request)
        other = _position(to)
        containers = core.reads.containers(caller)
        tag = container or (containers[0] if containers else None)
        head = runtime.log.head().seq
        if tag is None:
            return pages.render(request, "asof.html", tag=None, containers=[], head=head)
        caller.reach(tag)
        seq = min(head, at if at is not None else head)
        if when is not None and when.strip():  # a date picked: the position it names
            seq = await run_in_threadpool(seq_at, runtime.log, _instant(when.strip()))
        changes: list[Change] | None = None
        later: Belief | None = None
        if other is not None:  # two instants: the earlier one's belief, the later's, between
            seq, end = sorted((seq, min(head, other)))
            changes = await run_in_threadpool(
                changes_between, runtime.log, seq, end, container_tag=tag
            )
            later = await run_in_threadpool(_belief, runtime, tag, end)
        belief = await run_in_threadpool(_belief, runtime, tag, seq)
        shown_changes = None if changes is None else changes[-MAX_CHANGES:]
        named = [c for c in shown_changes or () if c.memory_id is not None]
        snippets = Snippets(
            core,
            caller,
            memory_ids=[c.memory_id for c in named if c.memory_id],
            numbered=[(c.memory_id, c.version) for c in named if c.memory_id and c.version],
        )
        return pages.render(
            request,
            "asof.html",
            tag=tag,
            containers=containers,
            head=head,
            first_at=_record_time(runtime, 1),
            head_at=_record_time(runtime, head),
            seq=seq,
            to=other,
            belief=belief,
            later=later,
            page=page,
            shown=slice((page - 1) * SHOWN, page * SHOWN),
            pages=max(
                1, -(-max(len(belief.memories), len(later.memories) if later else 0) // SHOWN)
            ),
            changes=shown_changes,
            snippets=snippets,
            more=0 if changes is None else max(0, len(changes) - MAX_CHANGES),
        )

    return router


def _instant(text: str) -> int:
    """A date picked in the form, in UTC: a plain date, or the date-time a browser's
    ``datetime-local`` field sends (no zone: the form says UTC), or one with its zone."""
    if len(text) > 10 and "T" in text and not re.search(r"(Z|[+-]\d\d:?\d\d)$", text):
        text += "Z"
    return parse_as_of_instant(text, "when")


def _record_time(runtime: Runtime, seq: int) -> int | None:
    """When the record at ``seq`` was appended (None before the first)."""
    if seq < 1:
        return None
    found = next(iter(runtime.log.read(seq, limit=1)), None)
    return None if found is None else found.record.ts


def _position(text: str | None) -> int | None:
    """The second position of a comparison, as its form field gives it (empty: none)."""
    if text is None or not text.strip():
        return None
    if not text.strip().isdigit():
        raise InvalidInput(f"a log position is a whole number, not {text!r}")
    return int(text)


def _belief(runtime: Runtime, container_tag: str, seq: int) -> Belief:
    """What the container's memory held once the log stood at ``seq``."""
    at_ns = 0 if seq == 0 else next(iter(runtime.log.read(seq, limit=1))).record.ts
    settings = runtime.settings
    state = MemoriesAt.nearest(
        runtime.log,
        runtime.sealer,
        scratch_root(settings.data_dir),
        seq,
        settings.data_dir / "snapshots",
    )
    try:
        return believed(state.path, as_of_ns=at_ns, seq=seq, container_tag=container_tag)
    finally:
        state.close()
