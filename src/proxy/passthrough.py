"""Every ``/v1/*`` route but chat completions, passed through to the upstream unchanged.

A client that points one base URL at mnemolog for everything (Open WebUI's RAG, LangChain's
``OpenAIEmbeddings``, the Responses API) reaches the upstream's embeddings, completions and
the rest through it. Only ``/v1/chat/completions`` gets a memory round; nothing else is read,
changed or recorded: the method, the path, the query and the body go as they came, and the
answer (its status, its content headers, its body, streamed as it arrives) comes back as the
upstream sent it. The client's own credentials never leave: the upstream sees this server's
key (``MNEMOLOG_UPSTREAM_API_KEY``), as for chat. So a key scoped to containers is refused it
(403) unless ``MNEMOLOG_PROXY_PASSTHROUGH_SCOPED`` allows it: these routes spend the server's
key on work that belongs to no container (a fine-tune, a file deleted), which is not what such
a key was given for.

Only a path that is plainly a route goes: segments of letters, digits and ``-._~:@!$'()*+,=``,
as the client sent them, none empty, ``.`` or ``..``. A decoded path is not the one sent: a
``%3F`` or ``%23`` in it would become the upstream's query or fragment, a ``%252e%252e`` a
``%2e%2e`` that a server decoding again reads as ``..``; ``\\`` and ``;`` mean other paths to
some servers; and a control byte is no URL at all. Each is refused 400 before anything is
sent, rather than guessed at.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from ..errors import ContainerForbidden, InvalidInput, PayloadTooLarge, UpstreamNotConfigured
from ..web.caller import caller_in
from .upstream import Upstream

# Request headers that describe the body or what the client accepts: the only ones passed on.
FORWARDED = ("content-type", "accept", "accept-encoding", "openai-beta")
# Response headers passed back; the rest (connections, lengths the stream recomputes, cookies
# the upstream sets) stay on this side.
RETURNED = ("content-type", "content-encoding", "cache-control", "x-request-id")
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
# Its route: the query goes on as it came, so it is not held to the API's known parameters.
ROUTE = "/v1/{path:path}"
_SEGMENT = r"[A-Za-z0-9\-._~:@!$'()*+,=]+"
_PLAIN = re.compile(rf"/v1/(?!\.\.?(?:/|$)){_SEGMENT}(?:/(?!\.\.?(?:/|$)){_SEGMENT})*")


def passthrough_routes(upstream: Upstream, max_body: int, *, scoped_keys: bool) -> APIRouter:
    """The passthrough; ``scoped_keys``: whether a key scoped to containers may use it."""
    router = APIRouter()

    @router.api_route(ROUTE, methods=METHODS, include_in_schema=False)
    async def passthrough(request: Request) -> Response:
        if caller_in(request.scope).scoped and not scoped_keys:
            raise ContainerForbidden(
                "this key reaches only its own containers, and the upstream's other routes"
                " belong to none (MNEMOLOG_PROXY_PASSTHROUGH_SCOPED allows them)"
            )
        if not upstream.configured:
            raise UpstreamNotConfigured("no upstream is configured: set MNEMOLOG_UPSTREAM_BASE_URL")
        raw = request.scope.get("raw_path") or request.scope["path"].encode()
        if not _PLAIN.fullmatch(raw.decode("latin-1")):
            raise InvalidInput(
                f"not a route of the upstream: {raw.decode('latin-1')!r} (a path is segments"
                " of letters, digits and -._~:@!$'()*+,= with no percent-encoding, none"
                " empty, '.' or '..')"
            )
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > max_body:
                raise PayloadTooLarge(f"a request body is at most {max_body} bytes")
        headers = {k: v for k, v in request.headers.items() if k in FORWARDED}
        route = raw.decode("latin-1").removeprefix("/v1/")  # as checked, as sent
        answer = await upstream.open(request.method, route, request.url.query, bytes(body), headers)

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
