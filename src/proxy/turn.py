"""One proxied turn: the conversation as sent upstream, its rounds, and its trace.

The turn decides what the next upstream call carries: the client's messages with the profile
context, the memory exchanges so far, and ``searchMemory`` while memory rounds are left. Any
memory failure turns memory off for the rest of the turn (a memory-less answer, with the
reason in the trace); an upstream that fails a request the proxy changed is asked once more
with the client's own request. At the end the whole turn is appended as events: one
``context.injected`` per tool result sent and one ``proxy.turn``.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any, Literal

import msgspec
from starlette.concurrency import run_in_threadpool

from ..eventlog import Actor, Draft, Sealer
from ..eventlog.events import CaptureDecided, ContextInjected, ProxyRound, ProxyTurn
from ..eventlog.subjects import container_subject
from ..memory import MEMORIES_RENDERER, Core, digest
from ..settings import Settings
from .calls import ToolCall
from .recall_tool import Injection, MemoryFailed, Profile, RecallTool
from .request import ChatRequest
from .tool import BadArguments, client_defines_search, search_query, upstream_body, with_profile
from .upstream import Upstream

PROXY = Actor(agent_id="local", protocol="proxy")

Decision = Literal["answer", "memory", "client_tools", "error"]
Outcome = Literal["answer", "client_tools", "upstream_error", "cancelled"]


class Services(msgspec.Struct, kw_only=True):
    """What a turn needs from the process: shared by every turn."""

    settings: Settings
    core: Core  # records a turn's events, applied before its answer ends
    sealer: Sealer
    upstream: Upstream
    memory: RecallTool


class Turn:
    def __init__(self, services: Services, request: ChatRequest) -> None:
        self.services = services
        self.request = request
        self.turn_id = f"trn_{uuid.uuid4().hex}"
        self.started = time.perf_counter()
        self.rounds: list[ProxyRound] = []
        self.injections: list[Injection] = []
        self.degraded: list[str] = []
        self.profile: Profile | None = None
        self.exchange: list[dict[str, Any]] = []
        self.memory_rounds = 0
        self.results = 0
        self.fallen_back = False
        self.usage: dict[str, int] = {}
        self.capture: asyncio.Future[CaptureDecided] | None = None
        self._memory = request.memory and services.settings.proxy_max_memory_rounds > 0
        if self._memory and client_defines_search(request.client_tools):
            self._memory = False
            self.degraded.append("tool_name_taken")
        if self._memory and request.body.get("tool_choice") == "none":
            self._memory = False

    # --- what goes upstream ----------------------------------------------------------------

    async def prepare(self) -> None:
        if not self.request.memory:
            return
        try:
            self.profile = await self.services.memory.profile(self.request.container_tag)
        except Exception:
            self.degraded.append("profile_failed")

    @property
    def memory_active(self) -> bool:
        """Whether ``searchMemory`` calls are the proxy's to run (else they are the client's)."""
        return self._memory and not self.fallen_back

    @property
    def offers_tool(self) -> bool:
        cap = self.services.settings.proxy_max_memory_rounds
        return self.memory_active and self.memory_rounds < cap

    @property
    def can_fall_back(self) -> bool:
        """Whether the next call differs from the client's own request, so a failure of it
        may be the proxy's doing and is worth one retry without memory."""
        changed = self.profile is not None or self._memory or bool(self.exchange)
        return changed and not self.fallen_back

    def next_body(self, *, stream: bool) -> bytes:
        client_messages = self.request.body["messages"]
        if self.fallen_back:
            messages = with_profile(client_messages, None)
        else:
            profile = self.profile.text if self.profile is not None else None
            messages = [*with_profile(client_messages, profile), *self.exchange]
        body = upstream_body(
            self.request.body, messages, offer_tool=self.offers_tool, stream=stream
        )
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()

    def fall_back(self, reason: str) -> None:
        self.fallen_back = True
        self.degraded.append(reason)

    # --- rounds ----------------------------------------------------------------------------

    def record_round(
        self,
        body: bytes,
        started: float,
        *,
        status: int | None,
        decision: Decision,
        calls: list[ToolCall] | None = None,
        error: str | None = None,
    ) -> ProxyRound:
        calls = calls or []
        memory = [c for c in calls if c.is_memory and self.memory_active]
        arguments = None
        if memory:
            payload = json.dumps([c.arguments for c in memory], ensure_ascii=False)
            arguments = self.services.sealer.seal_text(
                container_subject(self.request.container_tag), payload
            )
        done = ProxyRound(
            request_digest=digest(body),
            status=status,
            latency_ms=round((time.perf_counter() - started) * 1000, 3),
            decision=decision,
            memory_calls=len(memory),
            client_calls=len(calls) - len(memory),
            arguments=arguments,
            error=error,
        )
        self.rounds.append(done)
        return done

    async def memory_round(self, calls: list[ToolCall], content: str) -> None:
        """Run the recalls the model asked for and add the exchange to the conversation; on
        any failure, turn memory off instead (the next call answers without it)."""
        self.memory_rounds += 1
        injections: list[Injection] = []
        try:
            for call in calls:
                query = search_query(call.arguments)
                injections.append(
                    await self.services.memory.search(self.request.container_tag, query, PROXY)
                )
        except BadArguments:
            self._memory_off("bad_arguments", injections)
            return
        except MemoryFailed as exc:
            self._memory_off(exc.code, injections)
            return
        last = self.rounds[-1]
        self.rounds[-1] = msgspec.structs.replace(
            last,
            recall_ids=[i.recall_id for i in injections],
            results=sum(len(i.version_ids) for i in injections),
        )
        self.injections += injections
        self.results += sum(len(i.version_ids) for i in injections)
        self.exchange.append(
            {"role": "assistant", "content": content, "tool_calls": [c.wire() for c in calls]}
        )
        for call, injection in zip(calls, injections, strict=True):
            self.exchange.append(
                {"role": "tool", "tool_call_id": call.id, "content": injection.text}
            )

    def _memory_off(self, reason: str, done: list[Injection]) -> None:
        self._memory = False
        self.degraded.append(reason)
        last = self.rounds[-1]
        self.rounds[-1] = msgspec.structs.replace(
            last, error=reason, recall_ids=[i.recall_id for i in done]
        )

    def add_usage(self, usage: object) -> None:
        if not isinstance(usage, dict):
            return
        for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
            value = usage.get(key)
            if isinstance(value, int):
                self.usage[key] = self.usage.get(key, 0) + value

    # --- the trace ---------------------------------------------------------------------------

    def headers(self) -> dict[str, str]:
        took = "true" if self.memory_rounds > 0 and self.injections else "false"
        values = {
            "trace-id": self.turn_id,
            "memory-round": took,
            "memory-rounds": str(self.memory_rounds),
            "memory-results": str(self.results),
            "streamed": "true" if self.request.stream else "false",
            "degraded": ",".join(self.degraded) or "none",
            "capture": "on" if self.request.capture else "off",
        }
        headers: dict[str, str] = {}
        for name, value in values.items():
            headers[f"x-mnemolog-{name}"] = value
            headers[f"x-bella-{name}"] = value
        return headers

    async def finish(self, outcome: Outcome, status: int, answer: str | None) -> None:
        """Append the turn's events (and the capture's decision) before the answer ends."""
        capture = None
        if self.capture is not None:
            try:
                capture = await self.capture
            except Exception:
                self.degraded.append("capture_failed")
        drafts = self._drafts(outcome, status, answer)
        if capture is not None:
            drafts.append(Draft(PROXY, capture))
        await run_in_threadpool(self._append, drafts)

    def _append(self, drafts: list[Draft]) -> None:
        self.services.core.record(drafts)  # so /inspect shows the turn once it is answered

    def finish_now(self, outcome: Outcome, status: int, answer: str | None) -> None:
        """For a turn cut short (its task cancelled): submit its events without waiting; a
        capture still running records its decision when it is done."""
        self.services.core.record(self._drafts(outcome, status, answer), durable=False)
        if self.capture is not None:
            self.capture.add_done_callback(self._capture_done)

    def _capture_done(self, done: asyncio.Future[CaptureDecided]) -> None:
        if not done.cancelled() and done.exception() is None:
            self.services.core.record([Draft(PROXY, done.result())], durable=False)

    def _drafts(self, outcome: Outcome, status: int, answer: str | None) -> list[Draft]:
        drafts = [
            Draft(
                PROXY,
                ContextInjected(
                    trace_id=self.turn_id,
                    recall_id=i.recall_id,
                    version_ids=i.version_ids,
                    renderer=MEMORIES_RENDERER,
                    sent_digest=i.digest,
                ),
            )
            for i in self.injections
        ]
        drafts.append(Draft(PROXY, self._turn_event(outcome, status, answer)))
        return drafts

    def _turn_event(self, outcome: Outcome, status: int, answer: str | None) -> ProxyTurn:
        return ProxyTurn(
            turn_id=self.turn_id,
            container_tag=self.request.container_tag,
            model=self.request.model,
            stream=self.request.stream,
            request_digest=digest(self.request.raw),
            rounds=self.rounds,
            outcome=outcome,
            status=status,
            memory_round=self.memory_rounds > 0 and bool(self.injections),
            results=self.results,
            answer_digest=None if answer is None else digest(answer),
            degraded=self.degraded,
            profile_at=None if self.profile is None else self.profile.at,
            profile_digest=None if self.profile is None else self.profile.digest,
            latency_ms=round((time.perf_counter() - self.started) * 1000, 3),
        )
