"""A typed client for mnemolog's REST API (``docs/client.md``), sync and async, over httpx.

    from mnemolog.client import Client

    with Client() as memory:
        memory.add("John prefers dark mode", "user_123")
        hits = memory.search("what theme does John like", "user_123").results

An error answer raises the class of ``mnemolog.errors`` the server raised (``NotFound``,
``VersionConflict``, ...), with ``.status`` and ``.body`` set; a server that cannot be reached
raises ``ServerUnreachable``.
"""

from __future__ import annotations

from ._async import AsyncClient
from ._calls import Contents, Instant, NewMemory, SearchMode
from ._config import DEFAULT_URL, KEY_VAR, URL_VAR
from ._errors import RequestFailed, ServerUnreachable, status_of
from ._sync import Client
from .models import (
    Candidate,
    Chain,
    ContainerErasure,
    Destroyed,
    Document,
    DocumentErased,
    DocumentHit,
    DocumentPage,
    DocumentWrite,
    Health,
    HealthLog,
    ImportItem,
    ImportReport,
    Link,
    LogHead,
    MemoryErased,
    MemoryHit,
    MemoryPage,
    MemoryVersion,
    Metadata,
    Profile,
    ProfileErased,
    Provenance,
    Rating,
    RecallFeedback,
    RecallTrace,
    RecallUsed,
    Scalar,
    SearchResult,
    Source,
    SplitRef,
    Stats,
    Trace,
    TurnTrace,
    WriteOutcome,
    WriteResult,
)

__all__ = [
    "DEFAULT_URL",
    "KEY_VAR",
    "URL_VAR",
    "AsyncClient",
    "Candidate",
    "Chain",
    "Client",
    "ContainerErasure",
    "Contents",
    "Destroyed",
    "Document",
    "DocumentErased",
    "DocumentHit",
    "DocumentPage",
    "DocumentWrite",
    "Health",
    "HealthLog",
    "ImportItem",
    "ImportReport",
    "Instant",
    "Link",
    "LogHead",
    "MemoryErased",
    "MemoryHit",
    "MemoryPage",
    "MemoryVersion",
    "Metadata",
    "NewMemory",
    "Profile",
    "ProfileErased",
    "Provenance",
    "Rating",
    "RecallFeedback",
    "RecallTrace",
    "RecallUsed",
    "RequestFailed",
    "Scalar",
    "SearchMode",
    "SearchResult",
    "ServerUnreachable",
    "Source",
    "SplitRef",
    "Stats",
    "Trace",
    "TurnTrace",
    "WriteOutcome",
    "WriteResult",
    "status_of",
]
