"""The live event stream: each record as a server-sent event that names, never reveals.

A message carries the event's seq, time, kind, actor and the ids it refers to, all stored in
clear in the log. Sealed fields are never opened: there are no API keys yet, so no caller can
be told apart as one entitled to read them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import msgspec

from ..clock import iso
from ..eventlog import EventLog, StoredRecord

CHUNK_RECORDS = 256
HEARTBEAT = b": heartbeat\n\n"
# Sent first, so a client learns the reconnection delay and sees the stream is open.
RETRY = b"retry: 2000\n\n"

_encoder = msgspec.json.Encoder()


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _is_id(name: str) -> bool:
    return name.endswith(("_id", "_ids")) or name in ("container_tag", "subject")


def event_ids(event: Any) -> dict[str, str | list[str]]:
    """The ids an event names (memory, version, container, trace...), by camelCase field name.

    Read from the fields themselves, so a new event kind needs no table here. Only plain
    strings and lists of strings: a sealed field is never an id.
    """
    ids: dict[str, str | list[str]] = {}
    for field in msgspec.structs.fields(type(event)):
        if not _is_id(field.name):
            continue
        value = getattr(event, field.name)
        if isinstance(value, str) or (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            ids[_camel(field.name)] = value
    return ids


def sse_message(stored: StoredRecord) -> bytes:
    """One record as an SSE message: ``id`` is its seq, ``event`` its kind."""
    record = stored.record
    data = {
        "seq": record.seq,
        "time": iso(record.ts),
        "kind": record.kind,
        "actor": {"agentId": record.actor.agent_id, "protocol": record.actor.protocol},
        "ids": event_ids(record.event),
    }
    # JSON escapes newlines, so ``data`` is one line whatever the ids hold.
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (
        record.seq,
        record.kind.encode(),
        _encoder.encode(data),
    )


def read_messages(log: EventLog, after: int, limit: int) -> tuple[bytes, int]:
    """Messages for up to ``limit`` records after seq ``after``, and the last seq read.

    Called in a worker thread: the log reads them in short transactions that are closed
    before the caller writes anything to a client.
    """
    out: list[bytes] = []
    last = after
    for stored in log.read(after + 1, limit=limit):
        out.append(sse_message(stored))
        last = stored.seq
    return b"".join(out), last


APPLY_RETRY = 0.01  # seconds before applying again, when the projections did not move


async def event_stream(
    log: EventLog,
    after: int,
    *,
    heartbeat: float,
    chunk: int = CHUNK_RECORDS,
    reader: Callable[[EventLog, int, int], tuple[bytes, int]] = read_messages,
    apply: Callable[[int], int] | None = None,
) -> AsyncIterator[bytes]:
    """Every event after seq ``after``, then new ones as they are committed, forever.

    It wakes on the log's commit notification, not by polling. At most ``chunk`` records'
    messages are held at a time, so a slow client costs bounded memory and, while the
    transport waits for it, no open transaction. With ``apply`` (which applies the log to the
    server's projections through a seq and answers the seq they reached), a record is sent
    only once it is applied: a key revoked by a record is then refused before that record
    is sent, so the stream the key opened ends before it (the revocation's own included).
    """
    yield RETRY
    while True:
        head = log.head().seq
        if head > after:
            ready = head if apply is None else await anyio.to_thread.run_sync(apply, head)
            if ready <= after:
                await anyio.sleep(APPLY_RETRY)
                continue
            limit = min(chunk, ready - after)
            data, after = await anyio.to_thread.run_sync(reader, log, after, limit)
            if data:
                yield data
            continue
        started = anyio.current_time()
        if await log.wait_for_async(after, timeout=heartbeat) > after:
            continue
        if anyio.current_time() - started < heartbeat / 2:
            return  # woken early with nothing new: the log is closing
        # Nothing new for a whole interval: a comment keeps proxies from closing the stream.
        yield HEARTBEAT
