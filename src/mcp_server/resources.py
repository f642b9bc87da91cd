"""Resources a client can attach as context: a container's profile, its recent memories and
its recent traces, as JSON. Reading one records nothing, as a REST ``GET`` records nothing.

    mnemolog://profile/{containerTag}
    mnemolog://memories[/{containerTag}]     the 20 newest, latest version of each
    mnemolog://traces[/{containerTag}]       the 20 newest recalls
"""

from __future__ import annotations

from urllib.parse import quote, unquote, urlsplit

import mcp_types as types

from ..errors import InvalidInput, NotFound
from ..memory import Caller, Core
from ..memory.agents import LOCAL
from ..views import profile_json, trace_summary, version_json

SCHEME = "mnemolog"
RECENT = 20
JSON = "application/json"
MAX_TAG = 256

TEMPLATES = [
    types.ResourceTemplate(
        name="profile",
        title="Profile of a container",
        uri_template="mnemolog://profile/{containerTag}",
        description="The user's lasting facts and current state in a container.",
        mime_type=JSON,
    ),
    types.ResourceTemplate(
        name="recent-memories",
        title="Recent memories of a container",
        uri_template="mnemolog://memories/{containerTag}",
        description=f"The {RECENT} newest memories of a container, latest version of each.",
        mime_type=JSON,
    ),
    types.ResourceTemplate(
        name="recent-traces",
        title="Recent searches of a container",
        uri_template="mnemolog://traces/{containerTag}",
        description=f"The {RECENT} newest recalls in a container, from every path.",
        mime_type=JSON,
    ),
]


def uri(kind: str, container_tag: str | None = None) -> str:
    tail = "" if container_tag is None else "/" + quote(container_tag, safe="")
    return f"{SCHEME}://{kind}{tail}"


class MemoryResources:
    def __init__(self, core: Core) -> None:
        self._core = core

    def listed(self, caller: Caller = LOCAL) -> list[types.Resource]:
        """The store-wide lists (for a key that reaches every container), and the profile of
        each container that has one and the key reaches."""
        found = [
            types.Resource(
                name="recent-memories",
                title="Recent memories",
                uri=uri("memories"),
                description=f"The {RECENT} newest memories of every container.",
                mime_type=JSON,
            ),
            types.Resource(
                name="recent-traces",
                title="Recent searches",
                uri=uri("traces"),
                description=f"The {RECENT} newest recalls, from every path.",
                mime_type=JSON,
            ),
        ]
        if caller.scoped:
            found = []
        found += [
            types.Resource(
                name=f"profile-{tag}",
                title=f"Profile of {tag}",
                uri=uri("profile", tag),
                mime_type=JSON,
            )
            for tag in self._core.reads.profile_tags(caller)
        ]
        return found

    def read(self, address: str, caller: Caller = LOCAL) -> object:
        """The JSON body of a resource; ``NotFound`` for an address that names none."""
        parts = urlsplit(address)
        raw = parts.path.removeprefix("/")
        tag = unquote(raw) or None  # a "/" in a tag is sent encoded, so one in ``raw`` is not
        if parts.scheme != SCHEME or "/" in raw or (tag is not None and len(tag) > MAX_TAG):
            raise NotFound(f"no resource {address!r}")
        caller.reach(tag)
        if parts.netloc == "profile":
            if tag is None:
                raise InvalidInput("a profile resource names its container: mnemolog://profile/TAG")
            return profile_json(tag, self._core.reads.profile(tag, caller))
        if parts.netloc == "memories":
            rows, total = self._core.reads.memories(caller, container_tag=tag, limit=RECENT)
            return {"memories": [version_json(r, windows=False) for r in rows], "total": total}
        if parts.netloc == "traces":
            traces = self._core.reads.traces(caller, container_tag=tag, limit=RECENT)
            return {"traces": [trace_summary(t) for t in traces]}
        raise NotFound(f"no resource {address!r}")
