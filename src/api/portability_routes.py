"""``GET /export`` and ``POST /import``: the ``bellamente-export`` version 1 document."""

from __future__ import annotations

from functools import partial
from typing import Annotated

import msgspec
from fastapi import APIRouter, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from ..memory.portable.format import Envelope
from ..runtime import Runtime
from ..web.caller import caller_in
from ..web.request_body import read_json

# An export holds a whole store: far larger than any other request body.
IMPORT_MAX_BYTES = 256 << 20


class _Tagged(msgspec.Struct, rename="camel"):
    container_tag: str | None = None


def containers_of(envelope: Envelope) -> set[str | None]:
    """Every container an import's items name (None for an item that names none: it is
    checked as a request over every container)."""
    found: set[str | None] = set()
    for raw in (*envelope.memories, *envelope.profiles, *envelope.documents):
        try:
            found.add(msgspec.json.decode(raw, type=_Tagged).container_tag)
        except msgspec.DecodeError:
            found.add(None)
    return found


def portability_routes(runtime: Runtime) -> APIRouter:
    router = APIRouter()
    core = runtime.core
    limit = max(IMPORT_MAX_BYTES, runtime.settings.max_body_bytes)

    @router.get("/export")
    def export_document(
        request: Request,
        container_tag: Annotated[str | None, Query(alias="containerTag", max_length=256)] = None,
    ) -> Response:
        caller_in(request.scope).reach(container_tag)
        document = core.export(container_tag)
        return Response(msgspec.json.encode(document), media_type="application/json")

    @router.post("/import")
    async def import_document(request: Request) -> Response:
        envelope = await read_json(request, Envelope, max_bytes=limit)
        caller = caller_in(request.scope)
        for tag in containers_of(envelope) if caller.scoped else ():
            caller.reach(tag)
        report = await run_in_threadpool(
            partial(core.importer.run, document_max_bytes=runtime.settings.max_body_bytes),
            envelope,
            caller.actor("import"),
            caller.may,
        )
        return Response(msgspec.json.encode(report), media_type="application/json")

    return router
