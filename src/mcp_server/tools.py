"""The tools over one core: parse, call, render, as the REST routes do.

Each tool calls what its REST route calls (``api/routes.py``, ``api/inspect.py``): the write
combiner, ``chains``, ``recall``, the read models. Every event it causes carries the call's
actor (protocol ``mcp``), and every recall the origin ``mcp``. The calls block (embedding, a
durable append), so the server runs them on worker threads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..clock import parse_as_of_instant, parse_observed_at
from ..errors import InvalidInput
from ..memory import (
    AgentRerank,
    Caller,
    Core,
    NewMemory,
    RecallRequest,
    Trace,
    VersionRow,
    agent_reranked,
)
from ..memory.agents import LOCAL
from ..views import (
    chain_body,
    erasure_json,
    hit_json,
    outcome_json,
    profile_json,
    rated_json,
    trace_json,
    version_json,
)
from .arguments import (
    AddArgs,
    DocumentArgs,
    EraseContainerArgs,
    ForgetArgs,
    IdArgs,
    ListArgs,
    ProfileArgs,
    RateArgs,
    SearchArgs,
    SetProfileArgs,
    TraceArgs,
    UpdateArgs,
    UsedArgs,
    parse,
)
from .catalog import (
    ADD,
    DELETE,
    ERASE_CONTAINER,
    ERASE_DOCUMENT,
    ERASE_PROFILE,
    ERASERS,
    FORGET,
    GET,
    GET_PROFILE,
    INSPECT,
    LIST,
    RATE,
    RESTORE,
    SEARCH,
    SET_PROFILE,
    TOOLS,
    UPDATE,
    USED,
    ToolSpec,
)

# Who an MCP call is when the connection names no one else: the one local agent, as every REST
# caller is while no API key is live.
MCP = LOCAL.actor("mcp")

Body = dict[str, object]


@dataclass(frozen=True)
class BoundTool:
    spec: ToolSpec
    run: Callable[[Any, Caller], Body]

    def __call__(self, arguments: dict[str, Any] | None, caller: Caller = LOCAL) -> Body:
        """Refuse bad arguments before anything is called, then call as ``caller`` (whose
        key's containers bound what it reaches, as on every REST route)."""
        return self.run(parse(arguments, self.spec.arguments), caller)


class MemoryTools:
    """The tool table of one core; ``hard_delete`` adds the tools that erase for good
    (``delete_memory``, ``erase_container``, ``erase_document``, ``erase_profile``)."""

    def __init__(
        self,
        core: Core,
        *,
        hard_delete: bool,
        rerank: AgentRerank = "off",
        rerank_pool: int = 10,
    ) -> None:
        self._core = core
        self._rerank = rerank  # when a search does not say (``MNEMOLOG_AGENT_RERANK``)
        self._rerank_pool = rerank_pool
        handlers: dict[str, Callable[[Any, Caller], Body]] = {
            SEARCH.name: self.search,
            ADD.name: self.add,
            GET.name: self.get,
            UPDATE.name: self.update,
            FORGET.name: self.forget,
            RESTORE.name: self.restore,
            LIST.name: self.list,
            INSPECT.name: self.inspect,
            GET_PROFILE.name: self.get_profile,
            SET_PROFILE.name: self.set_profile,
            USED.name: self.used,
            RATE.name: self.rate,
            DELETE.name: self.delete,
            ERASE_CONTAINER.name: self.erase_container,
            ERASE_DOCUMENT.name: self.erase_document,
            ERASE_PROFILE.name: self.erase_profile,
        }
        specs = [*TOOLS, *(ERASERS if hard_delete else ())]
        self._bound = {spec.name: BoundTool(spec, handlers[spec.name]) for spec in specs}

    @property
    def specs(self) -> list[ToolSpec]:
        return [tool.spec for tool in self._bound.values()]

    def get_tool(self, name: str) -> BoundTool | None:
        return self._bound.get(name)

    def search(self, a: SearchArgs, caller: Caller) -> Body:
        caller.reach(a.container_tag)
        request = RecallRequest(
            q=a.query,
            container_tag=a.container_tag,
            limit=a.limit,
            recency=a.recency,
            diversify=a.diversify,
            as_of=None if a.as_of is None else parse_as_of_instant(a.as_of),
            fact_as_of=None
            if a.fact_as_of is None
            else parse_as_of_instant(a.fact_as_of, "factAsOf"),
            include_forgotten=a.include_forgotten,
            min_trust=a.min_trust,
        )
        request = agent_reranked(request, self._rerank, a.rerank, self._rerank_pool)
        # As for REST: the answer does not wait for the trace's group commit; whatever reads
        # traces (inspect_trace, memory_used, /inspect) settles first.
        result = self._core.recall.search(
            request, origin="mcp", actor=caller.actor("mcp"), durable=False
        )
        return {
            "results": [hit_json(hit, n) for n, hit in enumerate(result.hits, 1)],
            "traceId": result.trace_id,
        }

    def add(self, a: AddArgs, caller: Caller) -> Body:
        caller.reach(a.container_tag)
        if a.expected_version is not None and a.supersedes is None:
            raise InvalidInput("expectedVersion needs supersedes: the memory it is expected of")
        item = NewMemory(
            content=a.content,
            is_static=a.is_static,
            metadata=None if a.metadata is None else dict(a.metadata),
            observed_at=parse_observed_at(a.observed_at),
            context=a.context,
            supersedes=a.supersedes,
            expected_version=a.expected_version,
            auto_supersede=a.auto_supersede,
        )
        (outcome,) = self._core.combiner.write(a.container_tag, [item], caller.actor("mcp"))
        return {"containerTag": a.container_tag, **outcome_json(outcome)}

    def get(self, a: IdArgs, caller: Caller) -> Body:
        self._reached(a.id, caller)
        return self._chain(a.id, caller)

    def update(self, a: UpdateArgs, caller: Caller) -> Body:
        latest = self._reached(a.id, caller)
        item = NewMemory(
            content=a.content,
            is_static=latest.is_static if a.is_static is None else a.is_static,
            metadata=latest.metadata if a.metadata is None else dict(a.metadata),
            observed_at=parse_observed_at(a.observed_at),
            context=latest.context if a.context is None else a.context,
        )
        self._core.chains.edit(a.id, item, caller.actor("mcp"), expected_version=a.expected_version)
        return self._chain(a.id, caller)

    def forget(self, a: ForgetArgs, caller: Caller) -> Body:
        self._reached(a.id, caller)
        self._core.chains.forget(a.id, a.reason, caller.actor("mcp"))
        return self._chain(a.id, caller)

    def restore(self, a: IdArgs, caller: Caller) -> Body:
        self._reached(a.id, caller)
        self._core.chains.restore(a.id, caller.actor("mcp"))
        return self._chain(a.id, caller)

    def delete(self, a: IdArgs, caller: Caller) -> Body:
        self._reached(a.id, caller)
        seq = self._core.chains.erase(a.id, caller.actor("mcp"))
        return {"id": a.id, "hardDeleted": True, "erased": True, "seq": seq}

    def erase_container(self, a: EraseContainerArgs, caller: Caller) -> Body:
        erased = self._core.erasure.container(
            a.container_tag, caller, force=a.force, protocol="mcp"
        )
        return erasure_json(erased)

    def erase_document(self, a: DocumentArgs, caller: Caller) -> Body:
        seq = self._core.erasure.document(a.document_id, caller, protocol="mcp")
        return {"id": a.document_id, "erased": True, "seq": seq}

    def erase_profile(self, a: ProfileArgs, caller: Caller) -> Body:
        seq = self._core.erasure.profile(a.container_tag, caller, protocol="mcp")
        return {"containerTag": a.container_tag, "erased": True, "seq": seq}

    def list(self, a: ListArgs, caller: Caller) -> Body:
        rows, total = self._core.reads.memories(
            caller,
            container_tag=a.container_tag,
            include_forgotten=a.include_forgotten,
            limit=a.limit,
            offset=a.offset,
        )
        return {
            "memories": [version_json(r, windows=False) for r in rows],
            "total": total,
            "limit": a.limit,
            "offset": a.offset,
        }

    def inspect(self, a: TraceArgs, caller: Caller) -> Body:
        return trace_json(self._core, self._trace(a.trace_id, caller))

    def get_profile(self, a: ProfileArgs, caller: Caller) -> Body:
        return profile_json(a.container_tag, self._core.reads.profile(a.container_tag, caller))

    def set_profile(self, a: SetProfileArgs, caller: Caller) -> Body:
        caller.reach(a.container_tag)
        self._core.chains.set_profile(a.container_tag, a.static, a.dynamic, caller.actor("mcp"))
        return profile_json(a.container_tag, self._core.reads.profile(a.container_tag, caller))

    def used(self, a: UsedArgs, caller: Caller) -> Body:
        used = self._core.usage.used(a.trace_id, caller, "mcp", memory_ids=a.ids)
        return {"traceId": used.trace_id, "used": used.memory_ids, "seq": used.seq}

    def rate(self, a: RateArgs, caller: Caller) -> Body:
        rated = self._core.usage.feedback(
            a.trace_id, caller, "mcp", memory_id=a.id, grade=a.grade, reason=a.reason
        )
        return rated_json(rated)

    def _chain(self, memory_id: str, caller: Caller) -> Body:
        return chain_body(self._core, memory_id, caller)

    def _trace(self, trace_id: str, caller: Caller) -> Trace:
        return self._core.reads.trace(trace_id, caller)

    def _reached(self, memory_id: str, caller: Caller) -> VersionRow:
        """The latest version of a memory the caller's key may reach (else: no such memory)."""
        return self._core.reads.latest(memory_id, caller)
