"""``Client``: the REST API of a mnemolog server, called synchronously over httpx."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
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


class Client:
    """A mnemolog server's REST API. Every method sends one request (``iter_memories`` one a
    page) and answers a typed value; an error answer raises its class of ``mnemolog.errors``.

    ``base_url`` defaults to ``$MNEMOLOG_URL``, else ``http://127.0.0.1:8080``; ``api_key``
    to ``$MNEMOLOG_API_KEY`` (sent as ``Authorization: Bearer``). ``transport`` replaces
    httpx's own, for proxies, retries or tests."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._config = Config.of(base_url, api_key)
        self._http = httpx.Client(
            base_url=self._config.base_url,
            headers=self._config.headers(),
            timeout=timeout,
            transport=transport,
        )

    @property
    def base_url(self) -> str:
        return self._config.base_url

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _send(self, call: Call[T]) -> T:
        try:
            response = self._http.request(
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

    def add(
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
        return self._send(Routes.add(content, container_tag, defaults, idempotency_key))

    def search(
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
        return self._send(Routes.search(body))

    def list(
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
        return self._send(Routes.list_memories(params))

    def iter_memories(
        self,
        container_tag: str | None = None,
        *,
        include_forgotten: bool | None = None,
        page_size: int = 100,
    ) -> Iterator[MemoryVersion]:
        """Every memory ``list`` pages through, a page a request, newest first."""
        offset = 0
        while True:
            page = self.list(
                container_tag, include_forgotten=include_forgotten, limit=page_size, offset=offset
            )
            yield from page.memories
            offset += len(page.memories)
            if not page.memories or offset >= page.total:
                return

    def get(self, memory_id: str, *, min_seq: int | None = None) -> Chain:
        """``GET /memories/{id}``: the memory with every version."""
        return self._send(Routes.get(memory_id, fields(min_seq=min_seq)))

    def update(
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
        return self._send(Routes.update(memory_id, body))

    def forget(self, memory_id: str, reason: str) -> Chain:
        """``POST /memories/{id}/forget``: hidden from search and lists, reversibly."""
        return self._send(Routes.forget(memory_id, reason))

    def restore(self, memory_id: str) -> Chain:
        """``POST /memories/{id}/restore``: a forgotten memory served again."""
        return self._send(Routes.restore(memory_id))

    def split(self, memory_id: str, version_id: str) -> Chain:
        """``POST /memories/{id}/split``: a version a later one replaced, made a memory of its
        own again; answers the new chain."""
        return self._send(Routes.split(memory_id, version_id))

    def delete(self, memory_id: str) -> MemoryErased:
        """``DELETE /memories/{id}``: hard erase; the text is destroyed for good."""
        return self._send(Routes.delete(memory_id))

    # Documents

    def add_document(
        self,
        content: str,
        container_tag: str,
        *,
        title: str | None = None,
        metadata: Metadata | None = None,
    ) -> DocumentWrite:
        """``POST /documents``: chunked and embedded; the same text again is ``deduplicated``."""
        body = fields(container_tag=container_tag, content=content, title=title, metadata=metadata)
        return self._send(Routes.add_document(body))

    def list_documents(
        self,
        container_tag: str | None = None,
        *,
        limit: int | None = None,
        offset: int | None = None,
    ) -> DocumentPage:
        """``GET /documents``: one page, newest first, without their content."""
        params = fields(container_tag=container_tag, limit=limit, offset=offset)
        return self._send(Routes.list_documents(params))

    def get_document(self, document_id: str) -> Document:
        """``GET /documents/{id}``: with its content."""
        return self._send(Routes.get_document(document_id))

    def delete_document(self, document_id: str) -> DocumentErased:
        """``DELETE /documents/{id}``: its text, chunks and vectors destroyed for good."""
        return self._send(Routes.delete_document(document_id))

    # Profiles and containers

    def profile(self, container_tag: str) -> Profile:
        """``GET /profile``: empty lists when none is set."""
        return self._send(Routes.profile(container_tag))

    def set_profile(
        self,
        container_tag: str,
        *,
        static: Sequence[str] | None = None,
        dynamic: Sequence[str] | None = None,
    ) -> Profile:
        """``PUT /profile``: replaces the container's profile whole."""
        return self._send(Routes.set_profile(container_tag, static, dynamic))

    def delete_profile(self, container_tag: str) -> ProfileErased:
        """``DELETE /profile``: the profile destroyed for good, nothing else."""
        return self._send(Routes.delete_profile(container_tag))

    def delete_container(self, container_tag: str, *, force: bool = False) -> ContainerErasure:
        """``DELETE /containers/{tag}``: everything of the container destroyed for good;
        ``force`` even while another agent's key is scoped to it."""
        return self._send(Routes.delete_container(container_tag, force))

    # Traces, feedback, health, portability

    def inspect(self, trace_id: str) -> Trace:
        """``GET /inspect/{traceId}``: a recorded recall, or a proxied turn (``trn_…``)."""
        return self._send(Routes.inspect(trace_id))

    def recall_used(self, trace_id: str, version_ids: Sequence[str]) -> RecallUsed:
        """``POST /recalls/{traceId}/used``: which served versions helped (``[]``: none)."""
        return self._send(Routes.recall_used(trace_id, version_ids))

    def recall_feedback(
        self, trace_id: str, version_id: str, grade: int, reason: str | None = None
    ) -> RecallFeedback:
        """``POST /recalls/{traceId}/feedback``: how much one served version was worth, 0
        (irrelevant) to 3 (the answer), with an optional reason (1 to 1000 characters)."""
        return self._send(Routes.recall_feedback(trace_id, version_id, grade, reason))

    def health(self) -> Health:
        """``GET /health`` (needs no key); ``ok`` is false while writes are stopped."""
        return self._send(Routes.health())

    def stats(self, container_tag: str | None = None) -> Stats:
        """``GET /stats``: how many memories (by status), documents and containers."""
        return self._send(Routes.stats(container_tag))

    def export(self, container_tag: str | None = None) -> dict[str, Any]:
        """``GET /export``: the ``bellamente-export`` document, as decoded JSON."""
        return self._send(Routes.export(container_tag))

    def import_export(self, document: Mapping[str, Any] | bytes) -> ImportReport:
        """``POST /import``: an export document (decoded, or its bytes as they are)."""
        return self._send(Routes.import_export(document))


__all__ = ["Client"]
