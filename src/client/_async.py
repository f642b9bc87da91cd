"""``AsyncClient``: the REST API of a mnemolog server, awaited over httpx; the same methods as
``Client`` (``_sync.py``), each a coroutine."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import httpx

from ._calls import Call, Contents, Instant, Routes, SearchMode, decode, fields
from ._config import Config
from ._errors import transport_error
from .models import (
    Chain,
    ContainerErasure,
    Document,
    DocumentErased,
    DocumentPage,
    DocumentWrite,
    Health,
    ImportReport,
    MemoryErased,
    MemoryPage,
    MemoryVersion,
    Metadata,
    Profile,
    ProfileErased,
    RecallFeedback,
    RecallUsed,
    SearchResult,
    Stats,
    Trace,
    WriteResult,
)

T = TypeVar("T")


class AsyncClient:
    """A mnemolog server's REST API, awaited: ``Client``'s methods as coroutines
    (``iter_memories`` an async iterator). An error answer raises its class of
    ``mnemolog.errors``.

    ``base_url`` defaults to ``$MNEMOLOG_URL``, else ``http://127.0.0.1:8080``; ``api_key``
    to ``$MNEMOLOG_API_KEY`` (sent as ``Authorization: Bearer``). ``transport`` replaces
    httpx's own, for proxies, retries or tests."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._config = Config.of(base_url, api_key)
        self._http = httpx.AsyncClient(
            base_url=self._config.base_url,
            headers=self._config.headers(),
            timeout=timeout,
            transport=transport,
        )

    @property
    def base_url(self) -> str:
        return self._config.base_url

    async def close(self) -> None:
        await self._http.aclose()

    aclose = close  # httpx's name for it

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _send(self, call: Call[T]) -> T:
        try:
            response = await self._http.request(
                call.method,
                call.path,
                params=call.params,
                content=call.body,
                headers=self._config.request_headers(call),
            )
        except httpx.TransportError as exc:
            raise transport_error(self.base_url, call.method, call.path, exc) from exc
        return decode(
            call, response.status_code, response.content, str(response.url), response.headers
        )

    # Memories

    async def add(
        self,
        content: Contents,
        container_tag: str,
        *,
        is_static: bool | None = None,
        metadata: Metadata | None = None,
        observed_at: Instant | None = None,
        context: str | None = None,
        supersedes: str | None = None,
        expected_version: int | None = None,
        auto_supersede: bool | None = None,
        idempotency_key: str | None = None,
    ) -> WriteResult:
        """``POST /memories``: one text, a dict (``NewMemory``) or a list of them (1 to 1000).
        The keywords apply to every item that does not set its own; ``idempotency_key`` is
        sent as the ``Idempotency-Key`` header, so a retry is answered, not written again."""
        defaults = fields(
            is_static=is_static,
            metadata=metadata,
            observed_at=observed_at,
            context=context,
            supersedes=supersedes,
            expected_version=expected_version,
            auto_supersede=auto_supersede,
        )
        return await self._send(Routes.add(content, container_tag, defaults, idempotency_key))

    async def search(
        self,
        q: str,
        container_tag: str | None = None,
        *,
        limit: int | None = None,
        search_mode: SearchMode | None = None,
        recency: bool | None = None,
        diversify: bool | None = None,
        as_of: Instant | None = None,
        fact_as_of: Instant | None = None,
        include_forgotten: bool | None = None,
        rerank: bool | None = None,
        min_trust: float | None = None,
        min_seq: int | None = None,
    ) -> SearchResult:
        """``POST /search``: the results, ranked, and the ``trace_id`` of the recorded recall."""
        body = fields(
            q=q,
            container_tag=container_tag,
            limit=limit,
            search_mode=search_mode,
            recency=recency,
            diversify=diversify,
            as_of=as_of,
            fact_as_of=fact_as_of,
            include_forgotten=include_forgotten,
            rerank=rerank,
            min_trust=min_trust,
            min_seq=min_seq,
        )
        return await self._send(Routes.search(body))

    async def list(
        self,
        container_tag: str | None = None,
        *,
        include_forgotten: bool | None = None,
        limit: int | None = None,
        offset: int | None = None,
        min_seq: int | None = None,
    ) -> MemoryPage:
        """``GET /memories``: one page of the latest version of each memory, newest first."""
        params = fields(
            container_tag=container_tag,
            include_forgotten=include_forgotten,
            limit=limit,
            offset=offset,
            min_seq=min_seq,
        )
        return await self._send(Routes.list_memories(params))

    async def iter_memories(
        self,
        container_tag: str | None = None,
        *,
        include_forgotten: bool | None = None,
        page_size: int = 100,
    ) -> AsyncIterator[MemoryVersion]:
        """Every memory ``list`` pages through, a page a request, newest first."""
        offset = 0
        while True:
            page = await self.list(
                container_tag, include_forgotten=include_forgotten, limit=page_size, offset=offset
            )
            for memory in page.memories:
                yield memory
            offset += len(page.memories)
            if not page.memories or offset >= page.total:
                return

    async def get(self, memory_id: str, *, min_seq: int | None = None) -> Chain:
        """``GET /memories/{id}``: the memory with every version."""
        return await self._send(Routes.get(memory_id, fields(min_seq=min_seq)))

    async def update(
        self,
        memory_id: str,
        content: str,
        *,
        is_static: bool | None = None,
        metadata: Metadata | None = None,
        observed_at: Instant | None = None,
        context: str | None = None,
        expected_version: int | None = None,
    ) -> Chain:
        """``PATCH /memories/{id}``: a new version (``is_static``, ``metadata`` and ``context``
        left out are the latest's); with ``expected_version``, refused (``VersionConflict``)
        unless that is still the latest."""
        body = fields(
            content=content,
            is_static=is_static,
            metadata=metadata,
            observed_at=observed_at,
            context=context,
            expected_version=expected_version,
        )
        return await self._send(Routes.update(memory_id, body))

    async def forget(self, memory_id: str, reason: str) -> Chain:
        """``POST /memories/{id}/forget``: hidden from search and lists, reversibly."""
        return await self._send(Routes.forget(memory_id, reason))

    async def restore(self, memory_id: str) -> Chain:
        """``POST /memories/{id}/restore``: a forgotten memory served again."""
        return await self._send(Routes.restore(memory_id))

    async def split(self, memory_id: str, version_id: str) -> Chain:
        """``POST /memories/{id}/split``: a version a later one replaced, made a memory of its
        own again; answers the new chain."""
        return await self._send(Routes.split(memory_id, version_id))

    async def delete(self, memory_id: str) -> MemoryErased:
        """``DELETE /memories/{id}``: hard erase; the text is destroyed for good."""
        return await self._send(Routes.delete(memory_id))

    # Documents

    async def add_document(
        self,
        content: str,
        container_tag: str,
        *,
        title: str | None = None,
        metadata: Metadata | None = None,
    ) -> DocumentWrite:
        """``POST /documents``: chunked and embedded; the same text again is ``deduplicated``."""
        body = fields(container_tag=container_tag, content=content, title=title, metadata=metadata)
        return await self._send(Routes.add_document(body))

    async def list_documents(
        self,
        container_tag: str | None = None,
        *,
        limit: int | None = None,
        offset: int | None = None,
    ) -> DocumentPage:
        """``GET /documents``: one page, newest first, without their content."""
        params = fields(container_tag=container_tag, limit=limit, offset=offset)
        return await self._send(Routes.list_documents(params))

    async def get_document(self, document_id: str) -> Document:
        """``GET /documents/{id}``: with its content."""
        return await self._send(Routes.get_document(document_id))

    async def delete_document(self, document_id: str) -> DocumentErased:
        """``DELETE /documents/{id}``: its text, chunks and vectors destroyed for good."""
        return await self._send(Routes.delete_document(document_id))

    # Profiles and containers

    async def profile(self, container_tag: str) -> Profile:
        """``GET /profile``: empty lists when none is set."""
        return await self._send(Routes.profile(container_tag))

    async def set_profile(
        self,
        container_tag: str,
        *,
        static: Sequence[str] | None = None,
        dynamic: Sequence[str] | None = None,
    ) -> Profile:
        """``PUT /profile``: replaces the container's profile whole."""
        return await self._send(Routes.set_profile(container_tag, static, dynamic))

    async def delete_profile(self, container_tag: str) -> ProfileErased:
        """``DELETE /profile``: the profile destroyed for good, nothing else."""
        return await self._send(Routes.delete_profile(container_tag))

    async def delete_container(
        self, container_tag: str, *, force: bool = False
    ) -> ContainerErasure:
        """``DELETE /containers/{tag}``: everything of the container destroyed for good;
        ``force`` even while another agent's key is scoped to it."""
        return await self._send(Routes.delete_container(container_tag, force))

    # Traces, feedback, health, portability

    async def inspect(self, trace_id: str) -> Trace:
        """``GET /inspect/{traceId}``: a recorded recall, or a proxied turn (``trn_…``)."""
        return await self._send(Routes.inspect(trace_id))

    async def recall_used(self, trace_id: str, version_ids: Sequence[str]) -> RecallUsed:
        """``POST /recalls/{traceId}/used``: which served versions helped (``[]``: none)."""
        return await self._send(Routes.recall_used(trace_id, version_ids))

    async def recall_feedback(
        self, trace_id: str, version_id: str, grade: int, reason: str | None = None
    ) -> RecallFeedback:
        """``POST /recalls/{traceId}/feedback``: how much one served version was worth, 0
        (irrelevant) to 3 (the answer), with an optional reason (1 to 1000 characters)."""
        return await self._send(Routes.recall_feedback(trace_id, version_id, grade, reason))

    async def health(self) -> Health:
        """``GET /health`` (needs no key); ``ok`` is false while writes are stopped."""
        return await self._send(Routes.health())

    async def stats(self, container_tag: str | None = None) -> Stats:
        """``GET /stats``: how many memories (by status), documents and containers."""
        return await self._send(Routes.stats(container_tag))

    async def export(self, container_tag: str | None = None) -> dict[str, Any]:
        """``GET /export``: the ``bellamente-export`` document, as decoded JSON."""
        return await self._send(Routes.export(container_tag))

    async def import_export(self, document: Mapping[str, Any] | bytes) -> ImportReport:
        """``POST /import``: an export document (decoded, or its bytes as they are)."""
        return await self._send(Routes.import_export(document))


__all__ = ["AsyncClient"]
