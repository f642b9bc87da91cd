"""The HTTP status of each error class, and the one JSON error body, for both HTTP shells.

The domain raises errors by kind (``errors.py``); which status a kind is answered with is
decided here, at the edge: ``{"error": {"code", "message"}}`` with the status below.
"""

from __future__ import annotations

from ..errors import (
    AgentDistrusted,
    ContainerForbidden,
    ContainerInUse,
    CorruptLog,
    DataDirLocked,
    DiskFull,
    EmbedderError,
    ForeignOrigin,
    IdempotencyConflict,
    InvalidInput,
    KeyDestroyed,
    LastLiveKey,
    MalformedBody,
    MemoryForgotten,
    MisdirectedHost,
    MnemologError,
    NotFound,
    NothingChanged,
    NothingToSplit,
    PayloadTooLarge,
    RequestRefused,
    RollbackAlreadyUndone,
    SessionsFull,
    StorageError,
    Unauthorized,
    UnsupportedMediaType,
    UpstreamFailed,
    UpstreamNotConfigured,
    UpstreamRejected,
    UpstreamTimeout,
    VersionConflict,
)

# The nearest class in an error's ancestry decides; anything unlisted is a 500.
STATUSES: dict[type[MnemologError], int] = {
    InvalidInput: 400,
    Unauthorized: 401,
    ContainerForbidden: 403,
    AgentDistrusted: 403,
    MalformedBody: 400,
    PayloadTooLarge: 413,
    UnsupportedMediaType: 415,
    NotFound: 404,
    NothingToSplit: 409,
    NothingChanged: 409,
    RollbackAlreadyUndone: 409,
    LastLiveKey: 409,
    RequestRefused: 403,
    ForeignOrigin: 403,
    MisdirectedHost: 421,
    VersionConflict: 409,
    MemoryForgotten: 409,
    IdempotencyConflict: 409,
    ContainerInUse: 409,
    KeyDestroyed: 410,
    DataDirLocked: 503,
    SessionsFull: 503,
    EmbedderError: 503,
    UpstreamNotConfigured: 503,
    UpstreamFailed: 502,
    UpstreamTimeout: 504,
    StorageError: 503,
    DiskFull: 507,
    CorruptLog: 500,
}


def http_status(exc: MnemologError) -> int:
    """The status ``exc`` is answered with; an upstream's refusal keeps the upstream's own."""
    if isinstance(exc, UpstreamRejected):
        return exc.upstream_status
    for cls in type(exc).__mro__:
        status = STATUSES.get(cls)
        if status is not None:
            return status
    return 500


def error_body(exc: MnemologError) -> dict[str, dict[str, str]]:
    return {"error": {"code": exc.code, "message": str(exc)}}
