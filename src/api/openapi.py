"""The served OpenAPI document, with the request bodies the routes read by hand.

Routes decode their bodies with msgspec (``web/request_body.py``) rather than through
FastAPI's parameters, so FastAPI's document would list no body for them: a client generator
or a schema-driven fuzzer would never learn what to send. Their Structs' JSON Schemas are
added here, once, when the document is first asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec
from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from ..memory.portable.format import ImportFile
from .models import (
    Forget,
    MarkUsed,
    PatchMemory,
    PostDocument,
    PutProfile,
    RateResult,
    Search,
    SplitMemory,
    TrainRanker,
    WriteMemories,
)
from .oversight_routes import BODIES as OVERSIGHT_BODIES

# (method, path) -> the Struct its body decodes into, and whether a body must be sent.
BODIES: dict[tuple[str, str], tuple[type[msgspec.Struct], bool]] = {
    ("post", "/memories"): (WriteMemories, True),
    ("patch", "/memories/{memory_id}"): (PatchMemory, True),
    ("post", "/memories/{memory_id}/forget"): (Forget, True),
    ("post", "/memories/{memory_id}/split"): (SplitMemory, True),
    ("post", "/documents"): (PostDocument, True),
    ("put", "/profile"): (PutProfile, True),
    ("post", "/search"): (Search, True),
    ("post", "/recalls/{trace_id}/used"): (MarkUsed, True),
    ("post", "/recalls/{trace_id}/feedback"): (RateResult, True),
    ("post", "/import"): (ImportFile, True),
    ("post", "/ranker/train"): (TrainRanker, False),
    **{key: (struct, False) for key, struct in OVERSIGHT_BODIES.items()},
}
_REF = "#/components/schemas/{name}"


def with_bodies(
    app: FastAPI, bodies: Mapping[tuple[str, str], tuple[type[msgspec.Struct], bool]] = BODIES
) -> Callable[[], dict[str, Any]]:
    """An ``openapi()`` for ``app``: FastAPI's document plus ``bodies``."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = get_openapi(
            title=app.title, version=app.version, routes=app.routes, openapi_version="3.1.0"
        )
        keys = list(bodies)
        schemas, components = msgspec.json.schema_components(
            [bodies[k][0] for k in keys], ref_template=_REF
        )
        document.setdefault("components", {}).setdefault("schemas", {}).update(components)
        for (method, path), schema in zip(keys, schemas, strict=True):
            operation = document.get("paths", {}).get(path, {}).get(method)
            if operation is None:
                continue  # a route not mounted in this app
            operation["requestBody"] = {
                "required": bodies[(method, path)][1],
                "content": {"application/json": {"schema": schema}},
            }
        app.openapi_schema = document
        return document

    return openapi
