"""One proxied turn: the conversation as sent upstream, its rounds, and its trace.

The turn decides what the next upstream call carries: the client's messages with the profile
context, the memory exchanges so far, and ``searchMemory`` (with ``saveMemory`` when it is on)
while memory rounds are left. Any memory failure turns memory off for the rest of the turn (a
memory-less answer, with the reason in the trace); a save the write decision refuses, or with
bad arguments, is told to the model instead. An upstream that fails a request the proxy
changed is asked once more with the client's own request. At the end the whole turn is
recorded by the domain (``memory/recall/turns.py``): one ``context.injected`` per search
result sent, the ``proxy.turn``, and the capture's decision.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any, Literal

import msgspec
from starlette.concurrency import run_in_threadpool

from ..errors import AgentDistrusted
from ..eventlog import Actor
from ..eventlog.events import CaptureDecided, ProxyRound, ProxyTurn
from ..memory import AgentRerank, Core, digest
from ..settings import Settings
from .calls import ToolCall
from .recall_tool import Injection, MemoryFailed, Profile, RecallTool
from .request import ChatRequest
from .save_tool import SaveRefused, SaveTool, save_result
from .tool import (
    SAVE_MEMORY,
    SEARCH_MEMORY,
    BadArguments,
    client_defines,
    client_defines_search,
    save_arguments,
    search_query,
    upstream_body,
    with_profile,
)
from .upstream import Upstream

PROXY = Actor(agent_id="local", protocol="proxy")

Decision = Literal["answer", "memory", "client_tools", "error"]
Outcome = Literal["answer", "client_tools", "upstream_error", "cancelled"]


class Services(msgspec.Struct, kw_only=True):
    """What a turn needs from the process: shared by every turn."""

    settings: Settings
    core: Core  # records a turn's events, applied before its answer ends
    upstream: Upstream
    memory: RecallTool


class Turn:
    def __init__(self, services: Services, request: ChatRequest, actor: Actor = PROXY) -> None:
        self.services = services
        self.request = request
        self.actor = actor  # the key's agent, stamped on every event of the turn
        self.turn_id = f"trn_{uuid.uuid4().hex}"
        self.started = time.perf_counter()
        self.rounds: list[ProxyRound] = []
        self.injections: list[Injection] = []
        self.degraded: list[str] = []
        self.profile: Profile | None = None
        self.exchange: list[dict[str, Any]] = []
        # The results of each memory round sent upstream that had any: the last one is what
        # a saveMemory ``replaces`` number refers to.
        self.shown: list[list[Injection]] = []
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
        self._saving = self._memory and services.settings.proxy_save_tool
        if self._saving and client_defines(request.client_tools, SAVE_MEMORY):
            self._saving = False
            self.degraded.append("save_tool_name_taken")
        self.saver = SaveTool(services.core, timeout=services.settings.proxy_recall_timeout)

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

    def is_ours(self, call: ToolCall) -> bool:
        """Whether a call is a memory call, the proxy's to run (else it is the client's)."""
        if not self.memory_active:
            return False
        return call.name == SEARCH_MEMORY or (call.name == SAVE_MEMORY and self._saving)

    def split(self, calls: list[ToolCall]) -> tuple[list[ToolCall], list[ToolCall]]:
        """The memory calls and the client's."""
        return [c for c in calls if self.is_ours(c)], [c for c in calls if not self.is_ours(c)]

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
        offer = self.offers_tool
        body = upstream_body(
            self.request.body,
            messages,
            offer_tool=offer,
            offer_save=offer and self._saving,
            stream=stream,
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
        memory, client = self.split(calls)
        searches = [c.arguments for c in memory if c.name == SEARCH_MEMORY]
        saves = [c.arguments for c in memory if c.name == SAVE_MEMORY]
        done = ProxyRound(
            request_digest=digest(body),
            status=status,
            latency_ms=round((time.perf_counter() - started) * 1000, 3),
            decision=decision,
            memory_calls=len(memory),
            client_calls=len(client),
            arguments=self.services.core.turns.sealed_arguments(
                self.request.container_tag, searches
            ),
            error=error,
            save_calls=len(saves),
            save_replaces=[_replaces_of(arguments) for arguments in saves],
        )
        self.rounds.append(done)
        return done

    async def memory_round(self, calls: list[ToolCall], content: str) -> None:
        """Run the recalls and saves the model asked for, in its order, and add the exchange
        to the conversation; when a recall or a write fails, or a search has bad arguments,
        turn memory off instead (the next call answers without it)."""
        self.memory_rounds += 1
        injections: list[Injection] = []
        saved: list[str] = []
        results: list[str] = []  # one tool result per call
        refused: str | None = None
        try:
            for call in calls:
                if call.name == SAVE_MEMORY:
                    text, version_id, code = await self._save(call)
                    results.append(text)
                    saved += [version_id] if version_id is not None else []
                    refused = refused or code
                    continue
                query = search_query(call.arguments)
                injection = await self.services.memory.search(
                    self.request.container_tag,
                    query,
                    self.actor,
                    rerank=agent_rerank(self.services.settings, self.request.rerank),
                    rerank_pool=self.services.settings.agent_rerank_pool,
                )
                injections.append(injection)
                results.append(injection.text)
        except BadArguments:
            self._memory_off("bad_arguments", injections, saved)
            return
        except MemoryFailed as exc:
            self._memory_off(exc.code, injections, saved)
            return
        last = self.rounds[-1]
        self.rounds[-1] = msgspec.structs.replace(
            last,
            recall_ids=[i.recall_id for i in injections],
            results=sum(len(i.version_ids) for i in injections),
            saved=saved,
            error=refused,
        )
        self.injections += injections
        if injections:
            self.shown.append(injections)
        self.results += sum(len(i.version_ids) for i in injections)
        self.exchange.append(
            {"role": "assistant", "content": content, "tool_calls": [c.wire() for c in calls]}
        )
        for call, text in zip(calls, results, strict=True):
            self.exchange.append({"role": "tool", "tool_call_id": call.id, "content": text})

    async def _save(self, call: ToolCall) -> tuple[str, str | None, str | None]:
        """One ``saveMemory`` call: its tool result, the version written or found, and the
        reason code when nothing was written (raises ``MemoryFailed`` when the write failed)."""
        try:
            args = save_arguments(call.arguments)
        except BadArguments as exc:
            return f"Not saved: {exc}.", None, "save_bad_arguments"
        shown: list[str] = []
        if args.replaces is not None:
            last = self.shown[-1] if self.shown else []
            if len(last) != 1:
                why = (
                    "no searchMemory result was shown in this conversation"
                    if not last
                    else "several searchMemory results were shown at once: search again for"
                    " the memory to replace"
                )
                return f"Not saved: replaces names no memory ({why}).", None, "save_bad_arguments"
            shown = last[0].version_ids
            if args.replaces > len(shown):
                return (
                    f"Not saved: the last searchMemory result has no memory {args.replaces}.",
                    None,
                    "save_bad_arguments",
                )
        elif self.shown and len(self.shown[-1]) == 1:
            shown = self.shown[-1][0].version_ids  # to name a memory the write replaced
        try:
            done = await self.saver.save(
                self.request.container_tag,
                args.content,
                shown=shown,
                replaces=args.replaces,
                actor=self.actor,
                metadata={"source": "saveMemory", "traceId": self.turn_id},
            )
        except SaveRefused as exc:
            return f"Not saved: {exc.why}.", None, exc.code
        return save_result(done), done.outcome.version_id, None

    def _memory_off(self, reason: str, done: list[Injection], saved: list[str]) -> None:
        self._memory = False
        self.degraded.append(reason)
        last = self.rounds[-1]
        self.rounds[-1] = msgspec.structs.replace(
            last, error=reason, recall_ids=[i.recall_id for i in done], saved=saved
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
            except AgentDistrusted:  # a refusal, not a failure: nothing was appended
                self.degraded.append("capture_refused")
            except Exception:
                self.degraded.append("capture_failed")
        turn = self._turn_event(outcome, status, answer)
        await run_in_threadpool(
            self.services.core.turns.record, self.actor, turn, self.injections, capture
        )

    def finish_now(self, outcome: Outcome, status: int, answer: str | None) -> None:
        """For a turn cut short (its task cancelled): submit its events without waiting; a
        capture still running records its decision when it is done."""
        turn = self._turn_event(outcome, status, answer)
        self.services.core.turns.record(self.actor, turn, self.injections, durable=False)
        if self.capture is not None:
            self.capture.add_done_callback(self._capture_done)

    def _capture_done(self, done: asyncio.Future[CaptureDecided]) -> None:
        if not done.cancelled() and done.exception() is None:
            self.services.core.turns.record_capture(self.actor, done.result())

    def _turn_event(self, outcome: Outcome, status: int, answer: str | None) -> ProxyTurn:
        return ProxyTurn(
            turn_id=self.turn_id,
            container_tag=self.request.container_tag,
            sealed_model=self.services.core.turns.sealed_model(
                self.request.container_tag, self.request.model
            ),
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


def _replaces_of(arguments: str) -> int | None:
    """The memory number a ``saveMemory`` call named, for its trace (None if it named none or
    its arguments are unusable)."""
    try:
        return save_arguments(arguments).replaces
    except BadArguments:
        return None


def agent_rerank(settings: Settings, asked: bool | None) -> AgentRerank:
    """How the memory round reranks: as the request says (``mnemolog.rerank``,
    ``x-mnemolog-rerank``), else always with ``MNEMOLOG_PROXY_RERANK``, else as the
    agent-facing setting says."""
    if asked is not None:
        return "on" if asked else "off"
    return "on" if settings.proxy_rerank else settings.agent_rerank
