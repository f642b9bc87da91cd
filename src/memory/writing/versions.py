"""What the events that make a version carry, sealed under the memory's key."""

from __future__ import annotations

import uuid
from typing import TypedDict

import msgspec
import numpy as np
import numpy.typing as npt

from ...embedding.port import embed_bytes
from ...eventlog import Sealed, Sealer

MAX_CONTENT = 100_000  # characters of a memory's text, as every shell takes it


class NewMemory(msgspec.Struct, frozen=True, kw_only=True):
    """One memory to write, as validated by the API."""

    content: str
    is_static: bool = False
    metadata: dict[str, object] | None = None
    observed_at: str | None = None
    # What the memory answers or continues (the question a reply answers): searched by
    # keyword beside the content, never part of it.
    context: str | None = None
    # The memory this one corrects: it becomes that chain's next version, whatever the write
    # decision would judge (``expected_version``: only if the chain is still at it).
    supersedes: str | None = None
    expected_version: int | None = None
    # False: never taken for a new version of another memory by the write decision (an exact
    # duplicate is still recognised; ``supersedes`` still applies).
    auto_supersede: bool = True


class VersionFields(TypedDict):
    """The fields every version-making event (written, superseded, edited) carries."""

    content: Sealed
    embedding: Sealed
    metadata: Sealed | None
    context: Sealed | None
    is_static: bool
    observed_at: str | None


def version_fields(
    sealer: Sealer, subject: str, item: NewMemory, vector: npt.NDArray[np.float32]
) -> VersionFields:
    return VersionFields(
        content=sealer.seal_text(subject, item.content),
        embedding=sealer.seal(subject, embed_bytes(vector)),
        metadata=seal_metadata(sealer, subject, item.metadata),
        context=None if item.context is None else sealer.seal_text(subject, item.context),
        is_static=item.is_static,
        observed_at=item.observed_at,
    )


def seal_metadata(
    sealer: Sealer, subject: str, metadata: dict[str, object] | None
) -> Sealed | None:
    if metadata is None:
        return None
    return sealer.seal(subject, msgspec.json.encode(metadata))


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"
