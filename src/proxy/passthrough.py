"""Every ``/v1/*`` route but chat completions, passed through to the upstream unchanged.

A client that points one base URL at mnemolog for everything (Open WebUI's RAG, LangChain's
``OpenAIEmbeddings``, the Responses API) reaches the upstream's embeddings, completions and
the rest through it. Only ``/v1/chat/completions`` gets a memory round; nothing else is read,
changed or recorded: the method, the path, the query and the body go as they came, and the
answer (its status, its content headers, its body, streamed as it arrives) comes back as the
upstream sent it. The client's own credentials never leave: the upstream sees this server's
key (``MNEMOLOG_UPSTREAM_API_KEY``), as for chat.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from ..errors import InvalidInput, PayloadTooLarge, UpstreamNotConfigured
from .upstream import Upstream

# Request headers that describe the body or what the client accepts: the only ones passed on.
FORWARDED = ("content-type", "accept", "accept-encoding", "openai-beta")
# Response headers passed back; the rest (connections, lengths the stream recomputes, cookies
# the upstream sets) stay on this side.
RETURNED = ("content-type", "content-encoding", "cache-control", "x-request-id")
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
# Its route: the query goes on as it came, so it is not held to the API's known parameters.
ROUTE = "/v1/{path:path}"


def passthrough_routes(upstream: Upstream, max_body: int) -> APIRouter:
    router = APIRouter()

    @router.api_route(ROUTE, methods=METHODS, include_in_schema=False)
    async def passthrough(path: str, request: Request) -> Response:
        if not upstream.configured:
            raise UpstreamNotConfigured("no upstream is configured: set MNEMOLOG_UPSTREAM_BASE_URL")
        if any(part in ("", ".", "..") for part in path.split("/")):
            raise InvalidInput(f"not a route of the upstream: /v1/{path}")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > max_body:
                raise PayloadTooLarge(f"a request body is at most {max_body} bytes")
        headers = {k: v for k, v in request.headers.items() if k in FORWARDED}
        answer = await upstream.open(request.method, path, request.url.query, bytes(body), headers)

        async def relayed() -> AsyncIterator[bytes]:
            try:
                async for chunk in answer.aiter_raw():
                    yield chunk
            finally:
                await answer.aclose()

        return StreamingResponse(
            relayed(),
            status_code=answer.status_code,
            headers={k: v for k, v in answer.headers.items() if k in RETURNED},
        )

    return router
