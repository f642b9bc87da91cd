"""Request and response bodies of the REST API, camelCase on the wire (seed API reference)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from ..clock import iso, parse_as_of_instant
from ..memory import GRADES, MAX_CONTENT, MAX_FEEDBACK_REASON, DocumentRow

# The largest integer SQLite takes (and PostgreSQL's bigint): a larger offset was a 500.
SQL_INT_MAX = 2**63 - 1

# Some text that is not only whitespace (a blank memory is refused, never stored).
Content = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_CONTENT, pattern=r"\S")]
Tag = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]


class _Body(msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True):
    pass


MemoryId = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]


class MemoryIn(_Body, frozen=True, kw_only=True):
    content: Content
    is_static: bool = False
    metadata: dict[str, str | int | float | bool | None] | None = None
    observed_at: str | None = None
    context: Content | None = None
    supersedes: MemoryId | None = None
    expected_version: Annotated[int, msgspec.Meta(ge=1)] | None = None
    auto_supersede: bool = True


class WriteMemories(_Body, frozen=True, kw_only=True):
    container_tag: Tag
    memories: Annotated[list[MemoryIn], msgspec.Meta(min_length=1, max_length=1000)]


class PatchMemory(_Body, frozen=True, kw_only=True):
    content: Content
    is_static: bool | None = None
    metadata: dict[str, str | int | float | bool | None] | None = None
    observed_at: str | None = None
    context: Content | None = None
    expected_version: Annotated[int, msgspec.Meta(ge=1)] | None = None


class Forget(_Body, frozen=True, kw_only=True):
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]


Fact = Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]
# How much a served result was worth (``memory/recall/usage.py``'s scale), and why.
Grade = Annotated[
    int,
    msgspec.Meta(
        ge=min(GRADES),
        le=max(GRADES),
        description="; ".join(f"{grade} {name}" for grade, name in GRADES.items()),
    ),
]
FeedbackReason = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_FEEDBACK_REASON)]


class PostDocument(_Body, frozen=True, kw_only=True):
    container_tag: Tag
    content: Annotated[str, msgspec.Meta(min_length=1)]
    title: Annotated[str, msgspec.Meta(max_length=1000)] | None = None
    metadata: dict[str, str | int | float | bool | None] | None = None


class PutProfile(_Body, frozen=True, kw_only=True):
    container_tag: Tag
    static: Annotated[list[Fact], msgspec.Meta(max_length=200)] = msgspec.field(
        default_factory=list
    )
    dynamic: Annotated[list[Fact], msgspec.Meta(max_length=200)] = msgspec.field(
        default_factory=list
    )


class Search(_Body, frozen=True, kw_only=True):
    q: Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)]
    container_tag: Tag | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10
    search_mode: Literal["memories", "documents", "hybrid"] = "memories"
    recency: bool = True
    diversify: bool | None = None
    as_of: str | None = None
    fact_as_of: str | None = None
    include_forgotten: bool = False
    rerank: bool = False
    # Only memories whose carried trust is at least this (see docs/security.md#trust).
    min_trust: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    # Answer only once this node has applied the log through this seq (a write's ``seq``).
    min_seq: Annotated[int, msgspec.Meta(ge=0, le=SQL_INT_MAX)] | None = None


def parse_as_of(text: str | None, name: str = "asOf") -> int | None:
    """``asOf`` (or ``factAsOf``): a date-time with an explicit timezone, or a plain date (UTC
    midnight)."""
    return None if text is None else parse_as_of_instant(text, name)


class SplitMemory(_Body, frozen=True, kw_only=True):
    version_id: MemoryId  # the version a later one replaced


def document_json(document: DocumentRow, *, content: bool) -> dict[str, object]:
    body: dict[str, object] = {
        "id": document.document_id,
        "containerTag": document.container_tag,
        "title": document.title,
        "metadata": document.metadata,
        "chunks": document.chunk_count,
        "erased": document.erased,
        "forgotten": document.forgotten,
        "provenance": {
            "agentId": document.agent_id,
            "protocol": document.protocol,
            "createdAt": iso(document.created_at),
            "seq": document.seq,
        },
    }
    if content:
        body["content"] = document.content
    return body


class MarkUsed(_Body, frozen=True, kw_only=True):
    """``POST /recalls/{traceId}/used``: the versions of the recall that helped (none: [])."""

    version_ids: Annotated[
        list[Annotated[str, msgspec.Meta(min_length=1, max_length=256)]],
        msgspec.Meta(max_length=100),
    ]


class RateResult(_Body, frozen=True, kw_only=True):
    """``POST /recalls/{traceId}/feedback``: how much one served version was worth."""

    version_id: MemoryId
    grade: Grade
    reason: FeedbackReason | None = None


class TrainRanker(_Body, frozen=True, kw_only=True):
    """``POST /ranker/train``: train the global model and every container's, or one's."""

    container_tag: Annotated[str, msgspec.Meta(min_length=1, max_length=256)] | None = None
