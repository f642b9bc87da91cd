"""The log as an auditor and a follower see it: ``GET /log/export`` and ``GET /events``.

Both stream, and both read the log in chunks in a worker thread: a slow client holds bounded
memory and never an LMDB read transaction (an open one would pin old pages, so the file would
grow while the client stalls).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from ..audit.export import ExportHeader, export_chunk, export_header, header_line, sign_header
from ..audit.signing import store_key
from ..audit.stream import event_stream
from ..errors import InvalidInput
from ..runtime import Runtime
from ..web.caller import caller_in

_SEQ = re.compile(r"[0-9]{1,20}")
_MAX_SEQ = 2**64 - 1  # seqs are stored as u64
_NO_BUFFERING = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def parse_seq(name: str, text: str | None) -> int | None:
    """A seq given as text: plain decimal digits, at most a u64, else ``InvalidInput``."""
    if text is None:
        return None
    if _SEQ.fullmatch(text) is None or int(text) > _MAX_SEQ:
        raise InvalidInput(f"{name} must be a sequence number (0 or more), not {text[:40]!r}")
    return int(text)


def parse_flag(name: str, text: str | None) -> bool:
    """A yes/no query flag: ``true`` or ``false`` (also ``1``, ``0``), else ``InvalidInput``."""
    if text is None or text in ("false", "0"):
        return False
    if text in ("true", "1"):
        return True
    raise InvalidInput(f"{name} must be true or false, not {text[:40]!r}")


def audit_routes(runtime: Runtime) -> APIRouter:
    router = APIRouter()
    log = runtime.log
    settings = runtime.settings
    chunk = settings.stream_chunk_records

    @router.get("/log/export")
    async def export_log(
        request: Request,
        from_: Annotated[str | None, Query(alias="from", max_length=40)] = None,
        to: Annotated[str | None, Query(max_length=40)] = None,
        sign: Annotated[str | None, Query(max_length=40)] = None,
    ) -> StreamingResponse:
        """Every record from ``from`` to ``to`` as JSON Lines, for tools/verify_log.py;
        ``sign=true`` signs the range with the store key."""
        caller_in(request.scope).reach(None)  # the whole log: no scoped key reads it
        first, last, signed = (
            parse_seq("from", from_),
            parse_seq("to", to),
            parse_flag("sign", sign),
        )

        def make_header() -> ExportHeader:
            header = export_header(log, first, last)
            return sign_header(header, store_key(settings.data_dir)) if signed else header

        header = await run_in_threadpool(make_header)

        async def lines() -> AsyncIterator[bytes]:
            yield header_line(header)
            for seq in range(header.from_seq, header.to_seq + 1, chunk):
                yield await run_in_threadpool(export_chunk, log, seq, header.to_seq, chunk)

        # Saved under a name that says what it is (a browser would call it "export").
        name = f"mnemolog-log-{header.from_seq}-{header.to_seq}{'-signed' if signed else ''}"
        disposition = {"content-disposition": f'attachment; filename="{name}.jsonl"'}
        return StreamingResponse(
            lines(), media_type="application/x-ndjson", headers={**_NO_BUFFERING, **disposition}
        )

    @router.get("/events")
    async def events(
        request: Request,
        since: Annotated[str | None, Query(max_length=40)] = None,
        last_event_id: Annotated[str | None, Header(max_length=40)] = None,
    ) -> StreamingResponse:
        """New events as server-sent events; ``Last-Event-ID`` (a reconnect) wins over ``since``."""
        caller_in(request.scope).reach(None)  # every container's events: no scoped key
        if last_event_id:
            after = parse_seq("Last-Event-ID", last_event_id)
        else:
            after = parse_seq("since", since)
        stream = event_stream(
            log,
            log.head().seq if after is None else after,
            heartbeat=settings.events_heartbeat_seconds,
            chunk=chunk,
            # Applied before sent: a revocation ends its key's stream before it is sent.
            apply=runtime.core.runner.sync_to,
        )
        return StreamingResponse(stream, media_type="text/event-stream", headers=_NO_BUFFERING)

    return router
