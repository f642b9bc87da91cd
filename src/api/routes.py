"""REST routes for memories and search: parse strictly, call the core, render."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Annotated, TypeVar

from fastapi import APIRouter, Header, Path, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.types import Scope

from ..clock import parse_observed_at
from ..errors import InvalidInput
from ..eventlog import Actor
from ..memory import MAX_KEY, NewMemory, RecallRequest, RecallResult, check_key
from ..runtime import Runtime
from ..views import (
    chain_body,
    erasure_json,
    hit_json,
    outcome_json,
    profile_json,
    rated_json,
    version_json,
)
from ..web.caller import caller_in
from ..web.request_body import decode_json, read_body, read_json
from .hot import Reply
from .models import (
    SQL_INT_MAX,
    Forget,
    MarkUsed,
    PatchMemory,
    PostDocument,
    PutProfile,
    RateResult,
    Search,
    SplitMemory,
    WriteMemories,
    document_json,
    parse_as_of,
)
from .query import MinSeq

TRACE_HEADER = "x-mnemolog-trace-id"
TRACE_HEADER_ALIAS = "x-bella-trace-id"  # for clients written against the seed API
REPLAYED_HEADER = "idempotent-replayed"  # a keyed write's first answer, given again


T = TypeVar("T")


def memory_routes(runtime: Runtime, hot: HotEndpoints) -> APIRouter:
    router = APIRouter()
    core = runtime.core
    limit = runtime.settings.max_body_bytes

    def in_reach(request: Request, memory_id: str) -> Actor:
        """The actor of a request on a memory its key may reach (else: no such memory)."""
        caller = caller_in(request.scope)
        core.reads.latest(memory_id, caller)
        return caller.actor("rest")

    def chain_response(memory_id: str, request: Request) -> JSONResponse:
        return JSONResponse(chain_body(core, memory_id, caller_in(request.scope)))

    @router.post("/memories")
    async def write_memories(
        request: Request,
        # Described here for the OpenAPI document; the handler reads it from the scope.
        idempotency_key: Annotated[
            str | None,
            Header(
                alias="Idempotency-Key",
                min_length=1,
                max_length=MAX_KEY,
                pattern="^[ -~]+$",
                description="Send the write again with the same key and request: the first"
                " answer again (Idempotent-Replayed: true), nothing written twice",
            ),
        ] = None,
    ) -> Response:
        raw = await read_body(request, max_bytes=limit)
        return reply_response(await hot.write_memories(raw, request.scope))

    @router.get("/memories")
    def list_memories(
        request: Request,
        container_tag: Annotated[str | None, Query(alias="containerTag", max_length=256)] = None,
        include_forgotten: Annotated[bool, Query(alias="includeForgotten")] = False,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Annotated[int, Query(ge=0, le=SQL_INT_MAX)] = 0,
        min_seq: MinSeq = None,
    ) -> JSONResponse:
        if min_seq is not None:
            core.see(min_seq)
        rows, total = core.reads.memories(
            caller_in(request.scope),
            container_tag=container_tag,
            include_forgotten=include_forgotten,
            limit=limit,
            offset=offset,
        )
        return JSONResponse(
            {
                "memories": [version_json(r, windows=False) for r in rows],
                "total": total,
                "limit": limit,
                "offset": offset,
            }
        )

    @router.get("/memories/{memory_id}")
    def get_memory(memory_id: str, request: Request, min_seq: MinSeq = None) -> JSONResponse:
        if min_seq is not None:
            core.see(min_seq)
        in_reach(request, memory_id)
        return chain_response(memory_id, request)

    @router.patch("/memories/{memory_id}")
    async def patch_memory(memory_id: str, request: Request) -> JSONResponse:
        caller = caller_in(request.scope)
        latest = core.reads.latest(memory_id, caller)
        actor = caller.actor("rest")
        body = await read_json(request, PatchMemory, max_bytes=limit)
        item = NewMemory(
            content=body.content,
            is_static=latest.is_static if body.is_static is None else body.is_static,
            metadata=dict(body.metadata) if body.metadata is not None else latest.metadata,
            observed_at=parse_observed_at(body.observed_at),
            context=latest.context if body.context is None else body.context,
        )
        await run_in_threadpool(
            lambda: core.chains.edit(memory_id, item, actor, expected_version=body.expected_version)
        )
        return chain_response(memory_id, request)

    @router.post("/memories/{memory_id}/forget")
    async def forget_memory(memory_id: str, request: Request) -> JSONResponse:
        actor = in_reach(request, memory_id)
        body = await read_json(request, Forget, max_bytes=limit)
        await run_in_threadpool(core.chains.forget, memory_id, body.reason, actor)
        return chain_response(memory_id, request)

    @router.post("/memories/{memory_id}/restore")
    async def restore_memory(memory_id: str, request: Request) -> JSONResponse:
        actor = in_reach(request, memory_id)
        await run_in_threadpool(core.chains.restore, memory_id, actor)
        return chain_response(memory_id, request)

    @router.post("/memories/{memory_id}/split", status_code=201)
    async def split_memory(memory_id: str, request: Request) -> JSONResponse:
        """A version a later one replaced, made a live chain of its own again."""
        actor = in_reach(request, memory_id)
        body = await read_json(request, SplitMemory, max_bytes=limit)
        outcome = await run_in_threadpool(core.splits.split, memory_id, body.version_id, actor)
        response = chain_response(outcome.memory_id, request)
        response.status_code = 201
        return response

    @router.delete("/memories/{memory_id}")
    async def hard_delete_memory(memory_id: str, request: Request) -> JSONResponse:
        """Hard delete: the only eraser. The content is destroyed for good."""
        actor = in_reach(request, memory_id)
        seq = await run_in_threadpool(core.chains.erase, memory_id, actor)
        return JSONResponse({"id": memory_id, "hardDeleted": True, "erased": True, "seq": seq})

    @router.post("/documents")
    async def post_document(request: Request) -> JSONResponse:
        body = await read_json(request, PostDocument, max_bytes=limit)
        caller = caller_in(request.scope)
        caller.reach(body.container_tag)
        outcome = await run_in_threadpool(
            lambda: core.ingest.ingest_document(
                body.container_tag,
                body.content,
                caller.actor("rest"),
                title=body.title,
                metadata=dict(body.metadata) if body.metadata is not None else None,
            )
        )
        return JSONResponse(
            {
                "id": outcome.document_id,
                "status": outcome.status,
                "chunks": outcome.chunks,
                "flagged": bool(outcome.flags),
                "flags": outcome.flags,
                "seq": outcome.seq,
            }
        )

    @router.get("/documents")
    def list_documents(
        request: Request,
        container_tag: Annotated[str | None, Query(alias="containerTag", max_length=256)] = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Annotated[int, Query(ge=0, le=SQL_INT_MAX)] = 0,
    ) -> JSONResponse:
        rows, total = core.reads.documents(
            caller_in(request.scope), container_tag=container_tag, limit=limit, offset=offset
        )
        return JSONResponse(
            {
                "documents": [document_json(r, content=False) for r in rows],
                "total": total,
                "limit": limit,
                "offset": offset,
            }
        )

    @router.get("/documents/{document_id}")
    def get_document(document_id: str, request: Request) -> JSONResponse:
        document = core.reads.document(document_id, caller_in(request.scope))
        return JSONResponse(document_json(document, content=True))

    @router.delete("/documents/{document_id}")
    async def erase_document(document_id: str, request: Request) -> JSONResponse:
        """Hard delete of a document: its text, chunks and their vectors, for good."""
        caller = caller_in(request.scope)
        seq = await run_in_threadpool(core.erasure.document, document_id, caller)
        return JSONResponse({"id": document_id, "erased": True, "seq": seq})

    @router.delete("/profile")
    async def erase_profile(
        request: Request,
        container_tag: Annotated[str, Query(alias="containerTag", min_length=1, max_length=256)],
    ) -> JSONResponse:
        """Hard delete of a container's profile, and of nothing else."""
        caller = caller_in(request.scope)
        seq = await run_in_threadpool(core.erasure.profile, container_tag, caller)
        return JSONResponse({"containerTag": container_tag, "erased": True, "seq": seq})

    @router.delete("/containers/{container_tag}")
    async def erase_container(
        container_tag: Annotated[str, Path(min_length=1, max_length=256)],
        request: Request,
        force: Annotated[bool, Query()] = False,
    ) -> JSONResponse:
        """Hard delete of everything of a container (a user): its memories, documents,
        profile, queries and tool arguments. Answers the receipt; a repeated call answers
        the same one while nothing was written to the container since."""
        caller = caller_in(request.scope)
        erased = await run_in_threadpool(
            lambda: core.erasure.container(container_tag, caller, force=force)
        )
        return JSONResponse(erasure_json(erased))

    @router.get("/profile")
    def get_profile(
        request: Request,
        container_tag: Annotated[str, Query(alias="containerTag", min_length=1, max_length=256)],
    ) -> JSONResponse:
        served = core.reads.profile(container_tag, caller_in(request.scope))
        return JSONResponse(profile_json(container_tag, served))

    @router.put("/profile")
    async def put_profile(request: Request) -> JSONResponse:
        body = await read_json(request, PutProfile, max_bytes=limit)
        caller = caller_in(request.scope)
        caller.reach(body.container_tag)
        await run_in_threadpool(
            core.chains.set_profile,
            body.container_tag,
            body.static,
            body.dynamic,
            caller.actor("rest"),
        )
        return get_profile(request, body.container_tag)

    @router.post("/recalls/{trace_id}/used")
    async def mark_used(trace_id: str, request: Request) -> JSONResponse:
        """Which results of a search helped (``[]``: none): the feedback trust learns from."""
        body = await read_json(request, MarkUsed, max_bytes=limit)
        caller = caller_in(request.scope)
        used = await run_in_threadpool(
            lambda: core.usage.used(trace_id, caller, "rest", version_ids=body.version_ids)
        )
        return JSONResponse(
            {
                "traceId": used.trace_id,
                "versionIds": used.version_ids,
                "memoryIds": used.memory_ids,
                "seq": used.seq,
            }
        )

    @router.post("/recalls/{trace_id}/feedback")
    async def rate_result(trace_id: str, request: Request) -> JSONResponse:
        """How much one served result was worth (0 irrelevant to 3 the answer): the explicit
        rating the ranker learns from."""
        body = await read_json(request, RateResult, max_bytes=limit)
        caller = caller_in(request.scope)
        rated = await run_in_threadpool(
            lambda: core.usage.feedback(
                trace_id,
                caller,
                "rest",
                version_id=body.version_id,
                grade=body.grade,
                reason=body.reason,
            )
        )
        return JSONResponse(rated_json(rated))

    @router.post("/search")
    async def search(request: Request) -> Response:
        raw = await read_body(request, max_bytes=limit)
        return reply_response(await hot.search(raw, request.scope))

    return router


class HotEndpoints:
    """``POST /memories`` and ``POST /search``, from body bytes to a reply: served by the hot
    path (``hot.py``) and by the framework's routes alike. The work runs on ``executor``'s
    threads: a write waits there for its durable append."""

    def __init__(self, runtime: Runtime, executor: Executor) -> None:
        self._core = runtime.core
        self._executor = executor

    async def _offload(self, work: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, work)

    async def write_memories(self, raw: bytes, scope: Scope) -> Reply:
        body = decode_json(raw, WriteMemories)
        caller = caller_in(scope)
        caller.reach(body.container_tag)
        actor = caller.actor("rest")
        items = [
            NewMemory(
                content=m.content,
                is_static=m.is_static,
                metadata=dict(m.metadata) if m.metadata is not None else None,
                observed_at=parse_observed_at(m.observed_at),
                context=m.context,
                supersedes=m.supersedes,
                expected_version=_expected_version(m.supersedes, m.expected_version),
                auto_supersede=m.auto_supersede,
            )
            for m in body.memories
        ]
        key = idempotency_key(scope)
        headers: dict[str, str] = {}
        if key is None:
            writes = self._core.combiner
            outcomes = await self._offload(lambda: writes.write(body.container_tag, items, actor))
        else:
            keyed = self._core.keyed
            answer = await self._offload(lambda: keyed.write(body.container_tag, items, actor, key))
            outcomes = answer.outcomes
            if answer.replayed:
                headers[REPLAYED_HEADER] = "true"
        return Reply(
            {"containerTag": body.container_tag, "memories": [outcome_json(o) for o in outcomes]},
            headers=headers,
        )

    async def search(self, raw: bytes, scope: Scope) -> Reply:
        body = decode_json(raw, Search)
        caller = caller_in(scope)
        caller.reach(body.container_tag)
        actor = caller.actor("rest")
        recall = RecallRequest(
            mode=body.search_mode,
            q=body.q,
            container_tag=body.container_tag,
            limit=body.limit,
            recency=body.recency,
            diversify=body.diversify,
            as_of=parse_as_of(body.as_of),
            fact_as_of=parse_as_of(body.fact_as_of, "factAsOf"),
            include_forgotten=body.include_forgotten,
            rerank=body.rerank,
            min_trust=body.min_trust,
        )
        core = self._core
        min_seq = body.min_seq

        def search() -> RecallResult:
            if min_seq is not None:
                core.see(min_seq)
            # The answer does not wait for the trace's commit (it is group-committed behind
            # it); /inspect waits for it. See docs/recall.md.
            return core.recall.search(recall, origin="rest", actor=actor, durable=False)

        result = await self._offload(search)
        results = [hit_json(hit, n) for n, hit in enumerate(result.hits, 1)]
        return Reply(
            {"results": results, "traceId": result.trace_id, "searchMode": body.search_mode},
            headers={TRACE_HEADER: result.trace_id, TRACE_HEADER_ALIAS: result.trace_id},
        )


def reply_response(reply: Reply) -> Response:
    return Response(
        reply.encoded(),
        status_code=reply.status,
        media_type="application/json",
        headers=dict(reply.headers),
    )


def idempotency_key(scope: Scope) -> str | None:
    """The request's ``Idempotency-Key`` header, if it sent one (its form is checked by the
    domain); sent twice, a 400."""
    found = [v for k, v in scope["headers"] if k == b"idempotency-key"]
    if not found:
        return None
    if len(found) > 1:
        raise InvalidInput("Idempotency-Key was sent more than once")
    # latin-1 maps every byte to one character: a byte outside printable ASCII stays visible
    return check_key(found[0].decode("latin-1"))


def _expected_version(supersedes: str | None, expected: int | None) -> int | None:
    if expected is not None and supersedes is None:
        raise InvalidInput("expectedVersion needs supersedes: the memory it is expected of")
    return expected
