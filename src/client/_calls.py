"""Each REST call as a value: method, path, query, body, headers and the type its answer
decodes to. The sync and async clients build calls here and differ only in how they send
them, so the wire names (``docs/api.md``) are written once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Generic, Literal, Required, TypedDict, TypeVar
from urllib.parse import quote

import msgspec

from ._errors import RequestFailed, error_from
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

REPLAYED_HEADER = "idempotent-replayed"

Instant = str | datetime | date
SearchMode = Literal["memories", "documents", "hybrid"]
Query = dict[str, str | int | bool]


class NewMemory(TypedDict, total=False):
    """One memory of ``add``, as a dict: the same names as ``add``'s keywords (camelCase
    names are taken too)."""

    content: Required[str]
    is_static: bool
    metadata: Metadata
    observed_at: Instant
    context: str
    supersedes: str
    expected_version: int
    auto_supersede: bool


Contents = str | NewMemory | Sequence[str | NewMemory]


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    method: str
    path: str
    answer: Any  # the msgspec type of the answer (a union is no ``type[T]``, hence Any)
    params: Query = field(default_factory=dict)
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    # Statuses besides 2xx whose body is an answer, not an error (``/health``'s 503).
    answered: tuple[int, ...] = ()


def decode(call: Call[T], status: int, content: bytes, url: str, headers: Mapping[str, str]) -> T:
    """The answer of ``call``, or the exception its error answer stands for."""
    if not (200 <= status < 300 or status in call.answered):
        raise error_from(status, content)
    try:
        answer: T = msgspec.json.decode(content, type=call.answer)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        if not 200 <= status < 300:  # an error body after all, where an answer may come
            raise error_from(status, content) from None
        raise RequestFailed(url, f"unexpected answer to {call.method} {call.path}: {exc}") from exc
    if isinstance(answer, WriteResult) and headers.get(REPLAYED_HEADER) == "true":
        # A retry under the same idempotency key: the first answer, nothing written now.
        replayed: T = msgspec.structs.replace(answer, replayed=True)
        return replayed
    return answer


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _wire(value: object) -> object:
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def fields(**given: object) -> dict[str, object]:
    """The given fields under their wire names, leaving out those not given (None): a field
    left out takes the server's default."""
    return {_camel(k): _wire(v) for k, v in given.items() if v is not None}


def _json(body: object) -> bytes:
    return msgspec.json.encode(body)


def _path(*parts: str) -> str:
    # An id or tag is one path segment: a slash or ``?`` in it must not make another route.
    return "/" + "/".join(quote(p, safe="") for p in parts)


class Routes:
    """Each route of ``docs/api.md`` the clients call, as the ``Call`` that sends it."""

    @staticmethod
    def add(
        content: Contents,
        container_tag: str,
        defaults: dict[str, object],
        idempotency_key: str | None,
    ) -> Call[WriteResult]:
        items: Sequence[str | NewMemory] = (
            [content] if isinstance(content, str | Mapping) else content
        )
        memories = []
        for item in items:
            own: Mapping[str, object] = {"content": item} if isinstance(item, str) else item
            memories.append({**defaults, **fields(**own)})
        headers = {} if idempotency_key is None else {"Idempotency-Key": idempotency_key}
        body = {"containerTag": container_tag, "memories": memories}
        return Call("POST", "/memories", WriteResult, body=_json(body), headers=headers)

    @staticmethod
    def search(body: dict[str, object]) -> Call[SearchResult]:
        return Call("POST", "/search", SearchResult, body=_json(body))

    @staticmethod
    def list_memories(params: Mapping[str, object]) -> Call[MemoryPage]:
        return Call("GET", "/memories", MemoryPage, params=_query(params))

    @staticmethod
    def get(memory_id: str, params: Mapping[str, object] | None = None) -> Call[Chain]:
        return Call("GET", _path("memories", memory_id), Chain, params=_query(params or {}))

    @staticmethod
    def update(memory_id: str, body: dict[str, object]) -> Call[Chain]:
        return Call("PATCH", _path("memories", memory_id), Chain, body=_json(body))

    @staticmethod
    def forget(memory_id: str, reason: str) -> Call[Chain]:
        body = _json({"reason": reason})
        return Call("POST", _path("memories", memory_id, "forget"), Chain, body=body)

    @staticmethod
    def restore(memory_id: str) -> Call[Chain]:
        return Call("POST", _path("memories", memory_id, "restore"), Chain)

    @staticmethod
    def split(memory_id: str, version_id: str) -> Call[Chain]:
        body = _json({"versionId": version_id})
        return Call("POST", _path("memories", memory_id, "split"), Chain, body=body)

    @staticmethod
    def delete(memory_id: str) -> Call[MemoryErased]:
        return Call("DELETE", _path("memories", memory_id), MemoryErased)

    @staticmethod
    def add_document(body: dict[str, object]) -> Call[DocumentWrite]:
        return Call("POST", "/documents", DocumentWrite, body=_json(body))

    @staticmethod
    def list_documents(params: Mapping[str, object]) -> Call[DocumentPage]:
        return Call("GET", "/documents", DocumentPage, params=_query(params))

    @staticmethod
    def get_document(document_id: str) -> Call[Document]:
        return Call("GET", _path("documents", document_id), Document)

    @staticmethod
    def delete_document(document_id: str) -> Call[DocumentErased]:
        return Call("DELETE", _path("documents", document_id), DocumentErased)

    @staticmethod
    def profile(container_tag: str) -> Call[Profile]:
        return Call("GET", "/profile", Profile, params={"containerTag": container_tag})

    @staticmethod
    def set_profile(
        container_tag: str, static: Sequence[str] | None, dynamic: Sequence[str] | None
    ) -> Call[Profile]:
        body = fields(
            container_tag=container_tag,
            static=None if static is None else list(static),
            dynamic=None if dynamic is None else list(dynamic),
        )
        return Call("PUT", "/profile", Profile, body=_json(body))

    @staticmethod
    def delete_profile(container_tag: str) -> Call[ProfileErased]:
        return Call("DELETE", "/profile", ProfileErased, params={"containerTag": container_tag})

    @staticmethod
    def delete_container(container_tag: str, force: bool) -> Call[ContainerErasure]:
        params: Query = {"force": True} if force else {}
        return Call("DELETE", _path("containers", container_tag), ContainerErasure, params=params)

    @staticmethod
    def inspect(trace_id: str) -> Call[Trace]:
        return Call("GET", _path("inspect", trace_id), Trace)

    @staticmethod
    def recall_used(trace_id: str, version_ids: Sequence[str]) -> Call[RecallUsed]:
        body = _json({"versionIds": list(version_ids)})
        return Call("POST", _path("recalls", trace_id, "used"), RecallUsed, body=body)

    @staticmethod
    def recall_feedback(
        trace_id: str, version_id: str, grade: int, reason: str | None
    ) -> Call[RecallFeedback]:
        fields: dict[str, object] = {"versionId": version_id, "grade": grade}
        if reason is not None:
            fields["reason"] = reason
        path = _path("recalls", trace_id, "feedback")
        return Call("POST", path, RecallFeedback, body=_json(fields))

    @staticmethod
    def health() -> Call[Health]:
        return Call("GET", "/health", Health, answered=(503,))

    @staticmethod
    def stats(container_tag: str | None) -> Call[Stats]:
        params: Query = {} if container_tag is None else {"containerTag": container_tag}
        return Call("GET", "/stats", Stats, params=params)

    @staticmethod
    def export(container_tag: str | None) -> Call[dict[str, Any]]:
        params: Query = {} if container_tag is None else {"containerTag": container_tag}
        return Call("GET", "/export", dict[str, Any], params=params)

    @staticmethod
    def import_export(document: Mapping[str, Any] | bytes) -> Call[ImportReport]:
        body = document if isinstance(document, bytes) else _json(document)
        return Call("POST", "/import", ImportReport, body=body)


def _query(params: Mapping[str, object]) -> Query:
    query: Query = {}
    for name, value in params.items():
        assert isinstance(value, str | int | bool), name
        query[name] = value
    return query


__all__ = ["Call", "Contents", "Instant", "NewMemory", "Routes", "SearchMode", "decode", "fields"]
