"""Server-sent events from an upstream, as the JSON objects of their ``data`` fields.

Tolerates what real servers send: ``data:`` with or without a space, events split over
several ``data`` lines, comment lines (keep-alives) and other fields, CRLF, a stream that ends
without ``[DONE]``, and an ``error`` object instead of a chunk. Keep-alives do not count
against the idle timeout: only events do.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from ..errors import UpstreamFailed, UpstreamTimeout
from .upstream import upstream_message

DONE = "[DONE]"


async def sse_chunks(
    response: httpx.Response, *, idle_timeout: float
) -> AsyncIterator[dict[str, Any]]:
    """Each chunk object until ``[DONE]`` or the end of the stream."""
    loop = asyncio.get_running_loop()
    lines = response.aiter_lines()
    data: list[str] = []
    deadline = loop.time() + idle_timeout
    while True:
        try:
            # asyncio.timeout, not wait_for: no task per line on the hot path.
            async with asyncio.timeout_at(deadline):
                line = await anext(lines)
        except StopAsyncIteration:
            line = None
        except TimeoutError as exc:
            raise UpstreamTimeout(
                f"the upstream sent no event for {idle_timeout:g} s while streaming"
            ) from exc
        except httpx.HTTPError as exc:
            raise UpstreamFailed(f"the upstream stream broke: {type(exc).__name__}") from exc
        if line is None or line == "":
            if data:
                payload = "\n".join(data)
                data = []
                deadline = loop.time() + idle_timeout
                if payload.strip() == DONE:
                    return
                yield _chunk(payload)
            if line is None:
                return
            continue
        if line.startswith(":"):
            continue  # a comment: keep-alive
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            data.append(value)
        elif field == "error":  # some servers announce a failure this way
            raise UpstreamFailed(
                f"the upstream failed while streaming: {upstream_message(value.encode())}"
            )


def _chunk(payload: str) -> dict[str, Any]:
    try:
        chunk = json.loads(payload)
    except ValueError as exc:
        raise UpstreamFailed("the upstream sent an event that is not JSON") from exc
    if not isinstance(chunk, dict):
        raise UpstreamFailed("the upstream sent an event that is not a JSON object")
    if "error" in chunk and "choices" not in chunk:
        message = upstream_message(payload.encode())
        raise UpstreamFailed(f"the upstream failed while streaming: {message}")
    return chunk
