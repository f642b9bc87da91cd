"""The arguments of each MCP tool: one msgspec Struct, which is both its JSON schema (what a
model reads) and its strict decoder (what is refused before anything is written).

Names are camelCase and the bounds are the REST API's (``api/models.py``), so a value REST
refuses, MCP refuses with the same code and message; ``tests/mcp`` holds the two together.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

import msgspec
from msgspec import Meta

from ..memory import GRADES, MAX_FEEDBACK_REASON
from ..web.request_body import decode_json

T = TypeVar("T", bound=msgspec.Struct)

Scalar = str | int | float | bool | None

MemoryId = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=256,
        description="A memory's `id` (`mem_…`), as search_memories, list_memories or "
        "add_memory gave it.",
    ),
]
Tag = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=256,
        description="The container: one per user or project. Use the same tag for one user "
        "in every call.",
    ),
]
TagFilter = Annotated[
    str,
    Meta(min_length=1, max_length=256, description="Only this container; omit for every one."),
]
Content = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=100_000,
        description="The fact, as one short self-contained sentence in the user's terms "
        "(e.g. 'Sam prefers window seats').",
    ),
]
Context = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=100_000,
        description="What the memory answers or continues, such as the question it replies "
        "to: searched by keyword beside the content, never part of it.",
    ),
]
Metadata = Annotated[
    dict[str, Scalar],
    Meta(description="Small key/value facts about the memory (source, topic...)."),
]
ObservedAt = Annotated[
    str,
    Meta(
        description="When the fact was said or true in the world: ISO 8601 with an explicit "
        "timezone, e.g. 2026-07-03T12:00:00Z. Default: now.",
    ),
]
ExpectedVersion = Annotated[
    int,
    Meta(
        ge=1,
        description="Apply only if the memory is still at this version (its `latestVersion`); "
        "otherwise the call fails with version_conflict and nothing is written.",
    ),
]
Fact = Annotated[str, Meta(min_length=1, max_length=2000)]
Facts = Annotated[list[Fact], Meta(max_length=200)]


class _Arguments(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True
):
    pass


class SearchArgs(_Arguments, frozen=True, kw_only=True):
    query: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=10_000,
            description="What to look for, in natural language (a question or a topic).",
        ),
    ]
    container_tag: TagFilter | None = None
    limit: Annotated[int, Meta(ge=1, le=100, description="How many results at most.")] = 10
    as_of: (
        Annotated[
            str,
            Meta(
                description="Record time: search what was known at this instant (the versions "
                "current then, before later corrections), e.g. 2026-01-01 or "
                "2026-07-03T12:00:00+02:00. A date-time needs a timezone. Omit for now.",
            ),
        ]
        | None
    ) = None
    fact_as_of: (
        Annotated[
            str,
            Meta(
                description="Fact time: what was true at this instant, by what is known now "
                "(or at asOf): of each memory, the version whose observedAt is the last at or "
                "before it. Same format as asOf. Omit for the current versions.",
            ),
        ]
        | None
    ) = None
    rerank: (
        Annotated[
            bool,
            Meta(
                description="Reorder the head of the results with the local cross-encoder: "
                "better answers, about 20-60 ms more (see docs/recall.md#rerank). Omit for the "
                "server's choice (`MNEMOLOG_AGENT_RERANK`, by default on when the model is "
                "installed); false for the fast path.",
            ),
        ]
        | None
    ) = None
    include_forgotten: Annotated[
        bool, Meta(description="Also serve forgotten memories (flagged `forgotten`).")
    ] = False
    min_trust: (
        Annotated[
            float,
            Meta(
                ge=0,
                le=1,
                description="Serve only memories whose trust (the least trust of the agents "
                "they come from, 0 to 1) is at least this. Omit for every memory.",
            ),
        ]
        | None
    ) = None
    recency: Annotated[
        bool, Meta(description="Rank newer facts (by observedAt, the fact time) higher.")
    ] = True
    diversify: (
        Annotated[
            bool, Meta(description="Force (true) or stop (false) reordering near-duplicates.")
        ]
        | None
    ) = None


class AddArgs(_Arguments, frozen=True, kw_only=True):
    content: Content
    container_tag: Tag
    context: Context | None = None
    is_static: Annotated[
        bool, Meta(description="A lasting trait (a name, an allergy) rather than a passing state.")
    ] = False
    metadata: Metadata | None = None
    observed_at: ObservedAt | None = None
    supersedes: (
        Annotated[
            str,
            Meta(
                min_length=1,
                max_length=256,
                description="The `id` of a memory this one corrects: it becomes that memory's "
                "next version (the older stays in its history).",
            ),
        ]
        | None
    ) = None
    expected_version: ExpectedVersion | None = None
    auto_supersede: Annotated[
        bool,
        Meta(
            description="false: never take this for a correction of another memory, however "
            "alike (an exact duplicate is still recognised).",
        ),
    ] = True


class IdArgs(_Arguments, frozen=True, kw_only=True):
    id: MemoryId


class UpdateArgs(_Arguments, frozen=True, kw_only=True):
    id: MemoryId
    content: Content
    is_static: Annotated[bool, Meta(description="Default: the current version's.")] | None = None
    metadata: Metadata | None = None
    observed_at: ObservedAt | None = None
    context: Context | None = None
    expected_version: ExpectedVersion | None = None


class ForgetArgs(_Arguments, frozen=True, kw_only=True):
    id: MemoryId
    reason: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=2000,
            description="Why it is forgotten (e.g. 'the user asked', 'no longer true').",
        ),
    ]


class ListArgs(_Arguments, frozen=True, kw_only=True):
    container_tag: TagFilter | None = None
    include_forgotten: Annotated[bool, Meta(description="Also list forgotten memories.")] = False
    limit: Annotated[int, Meta(ge=1, le=500, description="How many at most.")] = 20
    offset: Annotated[int, Meta(ge=0, description="How many of the newest to skip.")] = 0


class TraceArgs(_Arguments, frozen=True, kw_only=True):
    trace_id: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=256,
            description="The `traceId` a search_memories call returned (`trc_…`).",
        ),
    ]


class ProfileArgs(_Arguments, frozen=True, kw_only=True):
    container_tag: Tag


class EraseContainerArgs(_Arguments, frozen=True, kw_only=True):
    container_tag: Tag
    force: bool = False


class DocumentArgs(_Arguments, frozen=True, kw_only=True):
    document_id: MemoryId


class SetProfileArgs(_Arguments, frozen=True, kw_only=True):
    container_tag: Tag
    static: Annotated[
        Facts, Meta(description="Lasting facts about the user (name, job, allergies).")
    ] = msgspec.field(default_factory=list)
    dynamic: Annotated[Facts, Meta(description="Current state (working on, travelling to).")] = (
        msgspec.field(default_factory=list)
    )


class UsedArgs(_Arguments, frozen=True, kw_only=True):
    trace_id: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=256,
            description="The `traceId` of the search_memories call whose results you used.",
        ),
    ]
    ids: Annotated[
        list[Annotated[str, Meta(min_length=1, max_length=256)]],
        Meta(
            max_length=100,
            description="The `id` of each result you actually used in your answer; an empty "
            "list if none helped.",
        ),
    ]


# What each grade of the scale means, for the model choosing one (strict zip: one per grade).
_MEANINGS = (
    "no bearing on it, or wrong",
    "on topic but no help",
    "helped answer",
    "answers it by itself",
)


class RateArgs(_Arguments, frozen=True, kw_only=True):
    trace_id: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=256,
            description="The `traceId` of the search_memories call that returned the result.",
        ),
    ]
    id: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=256,
            description="The `id` of the result you rate, as search_memories returned it.",
        ),
    ]
    grade: Annotated[
        int,
        Meta(
            ge=min(GRADES),
            le=max(GRADES),
            description="How much it was worth to the query: "
            + ", ".join(
                f"{grade} {name} ({meaning})"
                for (grade, name), meaning in zip(GRADES.items(), _MEANINGS, strict=True)
            )
            + ".",
        ),
    ]
    reason: (
        Annotated[
            str,
            Meta(
                min_length=1,
                max_length=MAX_FEEDBACK_REASON,
                description="Why, in a few words (optional).",
            ),
        ]
        | None
    ) = None


def parse(arguments: dict[str, Any] | None, type_: type[T]) -> T:
    """Decode a call's arguments as REST decodes a body: the same strict decoder and the same
    refusals (wrong types, unknown fields, control characters), raising ``InvalidInput``."""
    return decode_json(msgspec.json.encode(arguments or {}), type_)


def input_schema(type_: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON schema of a Struct, flat: an object at the root (as MCP requires), and each
    optional field shown as its type, not as "that type or null"."""
    (schema,) = msgspec.json.schema(type_)["$defs"].values()
    schema.pop("title", None)
    schema["properties"] = {
        name: _tidy(prop) for name, prop in schema.get("properties", {}).items()
    }
    return dict(schema)


def _tidy(prop: dict[str, Any]) -> dict[str, Any]:
    branches = prop.get("anyOf")
    if prop.get("default", 0) is None and isinstance(branches, list):
        kept = [b for b in branches if b != {"type": "null"}]
        if len(kept) == 1:
            return dict(kept[0])
    return prop
