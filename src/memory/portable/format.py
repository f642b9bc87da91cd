"""The ``bellamente-export`` version 1 document: its shape, and the checks one chain must pass.

The envelope is decoded strictly (a wrong format, version or shape refuses the whole file);
each chain, document and profile is decoded and checked on its own, so a malformed one fails
alone while the rest lands.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Literal, TypeVar

import msgspec

from ...clock import parse_instant

FORMAT: Literal["bellamente-export"] = "bellamente-export"
VERSION: Literal[1] = 1

Content = Annotated[str, msgspec.Meta(min_length=1, max_length=100_000)]
Tag = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
Id = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
Fact = Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]
Scalar = str | int | float | bool | None
T = TypeVar("T")


class _Doc(msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True):
    pass


class Provenance(_Doc, frozen=True, kw_only=True, omit_defaults=True):
    """Who made a version or document in the store it was exported from."""

    agent_id: str | None = None
    protocol: str | None = None
    kind: str | None = None
    created_at: str | None = None


class Version(_Doc, frozen=True, kw_only=True):
    id: Id | None = None
    version: Annotated[int, msgspec.Meta(ge=1)]
    content: Content
    is_static: bool = False
    metadata: dict[str, Scalar] | None = None
    observed_at: str | None = None
    valid_from: str
    valid_to: str | None = None
    provenance: Provenance | None = None
    # mnemolog's extension: what the version answers. Left out when absent, so a chain
    # without one encodes (and digests) as it did before the field existed.
    context: Content | msgspec.UnsetType = msgspec.UNSET


class Link(_Doc, frozen=True, kw_only=True):
    """A chain of the file this chain may update (``memory.linked``)."""

    id: Id
    similarity: Annotated[float, msgspec.Meta(ge=-1.0, le=1.0)]
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]


class SplitSource(_Doc, frozen=True, kw_only=True):
    """The version of another chain of the file this chain was split from (``memory.split``)."""

    id: Id
    version_id: Id


class Chain(_Doc, frozen=True, kw_only=True):
    id: Id
    container_tag: Tag
    created_at: str | None = None
    forgotten: bool = False
    forgotten_at: str | None = None
    forgotten_reason: Fact | None = None
    versions: Annotated[list[Version], msgspec.Meta(min_length=1, max_length=10_000)]
    # Unset, not empty, when there are none: a chain without links encodes (and digests) as
    # it did before the field existed.
    possibly_updates: Annotated[list[Link], msgspec.Meta(max_length=1000)] | msgspec.UnsetType = (
        msgspec.UNSET
    )
    # mnemolog's extension, unset when the chain was not split from another.
    split_from: SplitSource | msgspec.UnsetType = msgspec.UNSET


class Profile(_Doc, frozen=True, kw_only=True):
    container_tag: Tag
    static: Annotated[list[Fact], msgspec.Meta(max_length=200)] = msgspec.field(
        default_factory=list
    )
    dynamic: Annotated[list[Fact], msgspec.Meta(max_length=200)] = msgspec.field(
        default_factory=list
    )


class Document(_Doc, frozen=True, kw_only=True):
    id: Id
    container_tag: Tag
    title: Annotated[str, msgspec.Meta(max_length=1000)] | None = None
    content: Annotated[str, msgspec.Meta(min_length=1)]
    metadata: dict[str, Scalar] | None = None
    provenance: Provenance | None = None


class Export(_Doc, frozen=True, kw_only=True):
    """The document ``GET /export`` writes."""

    format: Literal["bellamente-export"] = FORMAT
    version: Literal[1] = VERSION
    exported_at: str
    container_tag: str | None = None
    memories: list[Chain] = msgspec.field(default_factory=list)
    profiles: list[Profile] = msgspec.field(default_factory=list)
    documents: list[Document] = msgspec.field(default_factory=list)


class ImportFile(_Doc, frozen=True, kw_only=True):
    """What ``POST /import`` takes, as its OpenAPI document shows it: an ``Export`` whose
    ``exportedAt`` may be left out. The route reads it as an ``Envelope``."""

    format: Literal["bellamente-export"]
    version: Literal[1]
    exported_at: str | None = None
    container_tag: str | None = None
    memories: list[Chain] = msgspec.field(default_factory=list)
    profiles: list[Profile] = msgspec.field(default_factory=list)
    documents: list[Document] = msgspec.field(default_factory=list)


class Envelope(_Doc, frozen=True, kw_only=True):
    """The document ``POST /import`` reads: its items are decoded one by one, so that a bad
    one fails alone."""

    format: Literal["bellamente-export"]
    version: Literal[1]
    exported_at: str | None = None
    container_tag: str | None = None
    memories: list[msgspec.Raw] = msgspec.field(default_factory=list)
    profiles: list[msgspec.Raw] = msgspec.field(default_factory=list)
    documents: list[msgspec.Raw] = msgspec.field(default_factory=list)


class Window(msgspec.Struct, frozen=True):
    valid_from: int
    valid_to: int | None


class CheckedChain(msgspec.Struct, frozen=True, kw_only=True):
    """A chain that passed every check, its instants in log units (UTC nanoseconds)."""

    chain: Chain
    windows: list[Window]
    created_at: int
    forgotten_at: int | None
    digest: str


class BadItem(Exception):
    """One chain, document or profile of a file is malformed: it fails alone."""


def decode_item(raw: msgspec.Raw, type_: type[T]) -> T:
    try:
        return msgspec.json.decode(raw, type=type_, strict=True)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise BadItem(str(exc)) from exc


def instant(text: str, field: str) -> int:
    """An ISO 8601 instant with an explicit timezone, as UTC nanoseconds."""
    try:
        return parse_instant(text)
    except ValueError as exc:
        raise BadItem(f"{field} is not an ISO 8601 date-time with a timezone: {text!r}") from exc


def check_chain(chain: Chain) -> CheckedChain:
    """A chain's versions must be numbered 1..n in order, each window in order and none
    overlapping the next, and only the last open (a chain has exactly one latest version)."""
    windows: list[Window] = []
    for index, version in enumerate(chain.versions):
        where = f"versions[{index}]"
        if version.version != index + 1:
            raise BadItem(f"{where}: version {version.version}, expected {index + 1}")
        start = instant(version.valid_from, f"{where}.validFrom")
        end = None if version.valid_to is None else instant(version.valid_to, f"{where}.validTo")
        if version.observed_at is not None:
            instant(version.observed_at, f"{where}.observedAt")
        if version.provenance is not None and version.provenance.created_at is not None:
            instant(version.provenance.created_at, f"{where}.provenance.createdAt")
        last = index == len(chain.versions) - 1
        if end is None and not last:
            raise BadItem(f"{where}: only the latest version may have an open window")
        if end is not None and last:
            raise BadItem(f"{where}: the latest version must have an open window (validTo null)")
        if end is not None and end < start:
            raise BadItem(f"{where}: validTo is before validFrom")
        if windows and (before := windows[-1].valid_to) is not None and start < before:
            raise BadItem(f"{where}: validFrom is before the previous version's validTo")
        windows.append(Window(start, end))
    ids = [v.id for v in chain.versions if v.id is not None]
    if len(set(ids)) != len(ids):
        raise BadItem("two versions have the same id")
    if chain.forgotten and chain.forgotten_reason is None:
        raise BadItem("a forgotten chain needs its forgottenReason")
    if not chain.forgotten and (chain.forgotten_reason or chain.forgotten_at) is not None:
        raise BadItem("forgottenReason or forgottenAt on a chain that is not forgotten")
    created = windows[0].valid_from
    if chain.created_at is not None:
        created = instant(chain.created_at, "createdAt")
    forgotten_at = None
    if chain.forgotten_at is not None:
        forgotten_at = instant(chain.forgotten_at, "forgottenAt")
    return CheckedChain(
        chain=chain,
        windows=windows,
        created_at=created,
        forgotten_at=forgotten_at,
        digest=hashlib.sha256(msgspec.json.encode(chain)).hexdigest(),
    )
