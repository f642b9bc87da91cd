"""The memory side of a turn: profile context and ``searchMemory`` recalls, each bounded by a
timeout, each failure a reason code instead of an exception (the turn then goes on without)."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
from starlette.concurrency import run_in_threadpool

from ..errors import RerankerUnavailable
from ..eventlog import Actor
from ..eventlog.events import InjectedSource
from ..memory import (
    AgentRerank,
    Core,
    RecallRequest,
    RenderedMemory,
    agent_reranked,
    digest,
    injected_source,
    render_memories,
    render_profile,
)


class Profile(msgspec.Struct, frozen=True, kw_only=True):
    text: str
    at: int  # when the profile was set (the ts of its profile.updated record)
    digest: str


class Injection(msgspec.Struct, frozen=True, kw_only=True):
    """One rendered tool result and what it was rendered from."""

    recall_id: str
    version_ids: list[str]
    text: str
    digest: str
    sources: list[InjectedSource] = []  # what the text says of each version's source


class MemoryFailed(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class RecallTool:
    def __init__(
        self, core: Core, *, limit: int, timeout: float, min_trust: float | None = None
    ) -> None:
        self._core = core
        self._limit = limit
        self._timeout = timeout
        self._min_trust = min_trust

    async def profile(self, container_tag: str) -> Profile | None:
        found = self._core.quarantine.served_profile(container_tag)
        if found is None:
            return None
        profile, at = found
        static = _strings(profile.get("static"))
        dynamic = _strings(profile.get("dynamic"))
        if not static and not dynamic:
            return None
        text = render_profile(static, dynamic)
        return Profile(text=text, at=at, digest=digest(text))

    async def search(
        self,
        container_tag: str,
        query: str,
        actor: Actor,
        *,
        rerank: AgentRerank = "off",
        rerank_pool: int = 10,
    ) -> Injection:
        """Recall for one ``searchMemory`` call, reranked as ``rerank`` says (the server's
        agent-facing setting); raises ``MemoryFailed`` with a reason code."""
        request = RecallRequest(
            q=query,
            container_tag=container_tag,
            limit=self._limit,
            min_trust=self._min_trust,
        )
        request = agent_reranked(request, rerank, None, rerank_pool)
        # Looked up at call time, so a recall replaced while serving is the one used.
        recall = self._core.recall
        try:
            result = await asyncio.wait_for(
                # Not durable on its own: the turn's events, appended after it in the same
                # log order before the answer ends, make it durable with them.
                run_in_threadpool(
                    lambda: recall.search(request, origin="proxy", actor=actor, durable=False)
                ),
                self._timeout,
            )
        except TimeoutError as exc:
            raise MemoryFailed("recall_timeout") from exc
        except RerankerUnavailable as exc:  # reranking "on" without the model
            raise MemoryFailed(exc.code) from exc
        except Exception as exc:
            raise MemoryFailed("recall_failed") from exc
        # Rendered as quoted data with each memory's source, never as instructions.
        served = [
            RenderedMemory.of(hit.row, injected_source(hit.source, hit.row.agent_id))
            for hit in result.hits
            if hit.row is not None
        ]
        text = render_memories(served)
        return Injection(
            recall_id=result.trace_id,
            version_ids=[m.version_id for m in served],
            text=text,
            digest=digest(text),
            sources=[m.source for m in served if m.source is not None],
        )


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
