"""A streamed turn, and the classifier that decides each round's nature as events arrive.

Nothing is sent to the client until the round's nature is known: the first piece of answer
text makes it an answer, and from then on text streams through as it arrives; tool-call deltas
are gathered until the upstream's stream ends. Then memory calls (``searchMemory``, and
``saveMemory`` when it is on) start a memory round (whose answer streams on in the same
response) and the client's own calls are sent whole, each with its index, under
``finish_reason: tool_calls``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from ..errors import UpstreamFailed, UpstreamRejected, UpstreamTimeout
from ..web.statuses import http_status
from .buffered import completion_of
from .calls import CallAccumulator
from .chunks import DONE, ChunkWriter, error_event, extra_delta
from .sse import sse_chunks
from .turn import Turn
from .upstream import failure_of


class _Round:
    """What one upstream stream carried, and what of it was passed on."""

    def __init__(self, out: ChunkWriter) -> None:
        self.out = out
        self.calls = CallAccumulator()
        self.content = ""
        self.finish: str | None = None
        self.usage: object = None
        self.answering = False
        self.saw_choice = False
        self._pending: list[dict[str, Any]] = []

    def take(self, chunk: dict[str, Any]) -> list[bytes]:
        self.out.learn(chunk)
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]  # cumulative where servers repeat it: keep the last
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return []  # usage-only chunks, pings, filter results
        choice = choices[0]
        self.saw_choice = True
        raw_delta = choice.get("delta")
        delta: dict[str, Any] = raw_delta if isinstance(raw_delta, dict) else {}
        tool_calls = delta.get("tool_calls")
        if isinstance(tool_calls, list):
            for call in tool_calls:
                self.calls.add(call)
        elif isinstance(delta.get("function_call"), dict):
            self.calls.add({"function": delta["function_call"], "index": 0})
        if isinstance(choice.get("finish_reason"), str):
            self.finish = choice["finish_reason"]
        sent: list[bytes] = []
        content = delta.get("content")
        extra = extra_delta(delta)
        if isinstance(content, str) and content:
            self.content += content
            if not self.answering:
                self.answering = True
                sent += [self.out.delta(p) for p in self._pending]
                self._pending = []
            sent.append(self.out.delta({"content": content, **extra}))
        elif extra:
            if self.answering:
                sent.append(self.out.delta(extra))
            else:
                self._pending.append(extra)
        return sent


async def run_streamed(turn: Turn) -> AsyncGenerator[bytes]:
    """The SSE bytes of the turn. Raises before its first item when the turn fails before
    anything was sent; after that a failure is sent as an error event."""
    out = ChunkWriter(turn.turn_id, turn.request.model)
    emitted = False
    try:
        while True:
            body = turn.next_body(stream=True)
            started = time.perf_counter()
            state = _Round(out)
            status: int | None = None
            try:
                async with turn.services.upstream.stream_chat(body) as response:
                    status = response.status_code
                    if not 200 <= status < 300:
                        raise failure_of(status, await response.aread())
                    async for chunk in _chunks(response, turn):
                        for piece in state.take(chunk):
                            emitted = True
                            yield piece
            except (UpstreamFailed, UpstreamTimeout) as exc:
                turn.record_round(body, started, status=status, decision="error", error=exc.code)
                retry = isinstance(exc, UpstreamFailed) and not isinstance(exc, UpstreamRejected)
                if retry and not emitted and turn.can_fall_back:
                    turn.fall_back("upstream_refused_memory")
                    continue
                if not emitted:
                    raise
                await turn.finish("upstream_error", http_status(exc), None)
                yield error_event(exc.code, str(exc))
                return
            calls = state.calls.finished()
            memory, client = turn.split(calls)
            turn.add_usage(state.usage)
            if memory and turn.offers_tool:
                turn.record_round(body, started, status=status, decision="memory", calls=calls)
                await turn.memory_round(memory, state.content)
                continue
            if not state.saw_choice and not emitted:
                # llama-cpp-python answers auto tool choice with an empty stream.
                turn.record_round(body, started, status=status, decision="error", error="empty")
                if turn.can_fall_back:
                    turn.fall_back("upstream_refused_memory")
                    continue
                raise UpstreamFailed("the upstream's stream ended without an answer")
            turn.record_round(
                body,
                started,
                status=status,
                decision="client_tools" if client else "answer",
                calls=calls,
            )
            if client:
                yield out.tool_calls(client)
                reason = "tool_calls"
            elif state.finish in (None, "tool_calls", "function_call"):
                reason = "stop"
            else:
                reason = state.finish
            emitted = True
            yield out.finish(reason)
            if turn.request.include_usage and turn.usage:
                yield out.usage(turn.usage)
            answer = "".join(out.answer)
            if client:
                answer = "\n".join(c.arguments for c in client)
            await turn.finish("client_tools" if client else "answer", 200, answer)
            yield DONE
            return
    except (asyncio.CancelledError, GeneratorExit):
        turn.finish_now("cancelled", 499, None)
        raise


async def _chunks(response: Any, turn: Turn) -> AsyncIterator[dict[str, Any]]:
    """The upstream's chunks; a server that ignored ``stream`` and sent a whole completion is
    read as one chunk."""
    media = response.headers.get("content-type", "")
    if media.startswith("application/json"):
        completion = completion_of(await response.aread())
        choice = completion["choices"][0]
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        yield {
            **completion,
            "choices": [
                {"index": 0, "delta": message, "finish_reason": choice.get("finish_reason")}
            ],
        }
        return
    idle = turn.services.settings.upstream_idle_timeout
    async for chunk in sse_chunks(response, idle_timeout=idle):
        yield chunk
