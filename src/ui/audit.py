"""``/ui/activity`` and ``/ui/audit``: the log itself, as a person reads it.

The activity feed lists the log's latest records (what was done, by which agent, naming ids,
never text: the same messages as ``GET /events``) and then follows the live stream in the
browser, resuming where it stopped after a dropped connection. The audit page shows the log's
head and the store key that signs exports, checks the whole log on request
(``verify-log``), and exports a range for an outside auditor. Both cover every container, so
a key scoped to some is refused, as ``/events`` and ``/log/export`` refuse it.
"""

from __future__ import annotations

import threading
import time
from typing import Annotated

import msgspec
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ..audit.signing import encode_public_key, fingerprint, public_bytes, store_key
from ..audit.stream import event_ids
from ..clock import iso
from ..eventlog import EVENT_TYPES
from ..eventlog.datadir import log_dir
from ..eventlog.events import event_tag
from ..eventlog.verify import VerifyReport, verify_log
from ..runtime import Runtime
from .forms import read_form
from .pages import Pages
from .snippets import Snippets

FEED = 100  # records the activity page lists before the live ones


class LastCheck(msgspec.Struct, frozen=True, kw_only=True):
    report: VerifyReport
    at: str
    took_s: float


def audit_pages(runtime: Runtime, pages: Pages) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    log = runtime.log
    kinds = " ".join(sorted(event_tag(t) for t in EVENT_TYPES))
    checked: list[LastCheck] = []  # the last check this process ran
    checking = threading.Lock()

    @router.get("/ui/activity")
    def activity(
        request: Request, before: Annotated[int | None, Query(ge=2, le=2**63 - 1)] = None
    ) -> Response:
        pages.caller(request).reach(None)
        head = log.head().seq
        last = min(head, before - 1) if before is not None else head
        first = max(1, last - FEED + 1)
        records = [] if last < 1 else list(log.read(first, limit=last - first + 1))
        rows = [
            {
                "seq": stored.seq,
                "at": iso(stored.record.ts),
                "kind": stored.record.kind,
                "agent": stored.record.actor.agent_id,
                "protocol": stored.record.actor.protocol,
                "ids": event_ids(stored.record.event),
            }
            for stored in reversed(records)
        ]
        # The memories the rows name (memoryId, targetMemoryId, memoryIds...), and the
        # version a record concerns, read in one batch.
        memory_ids: list[str] = []
        version_ids: list[str] = []
        for stored in records:
            for name, value in event_ids(stored.record.event).items():
                if name.endswith(("emoryId", "emoryIds")):
                    memory_ids += [value] if isinstance(value, str) else value
                elif name == "versionId" and isinstance(value, str):
                    version_ids.append(value)
        return pages.render(
            request,
            "activity.html",
            rows=rows,
            snippets=Snippets(
                runtime.core, pages.caller(request), memory_ids=memory_ids, version_ids=version_ids
            ),
            head=head,
            live=before is None,
            kinds=kinds,
            older=first if first > 1 else None,
        )

    @router.get("/ui/audit")
    def audit(request: Request) -> Response:
        pages.caller(request).reach(None)
        return render_audit(request)

    @router.post("/ui/audit/verify")
    async def verify(request: Request) -> Response:
        await read_form(request, pages.sessions)
        pages.caller(request).reach(None)
        with checking:  # one check at a time: each reads the whole log
            started = time.monotonic()
            report = await run_in_threadpool(verify_log, log_dir(runtime.settings.data_dir))
            checked[:] = [
                LastCheck(
                    report=report,
                    at=iso(time.time_ns()),
                    took_s=round(time.monotonic() - started, 3),
                )
            ]
        return render_audit(request)

    def render_audit(request: Request) -> Response:
        head = log.head()
        key = store_key(runtime.settings.data_dir)
        return pages.render(
            request,
            "audit.html",
            head=head,
            head_at=iso(head.ts) if head.seq else None,
            public_key=encode_public_key(key),
            fingerprint=fingerprint(public_bytes(key)),
            last=checked[0] if checked else None,
        )

    return router
