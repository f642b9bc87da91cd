"""A memory named on a page by its id, shown with the start of its text beside it.

A page's rows name memories and versions by id (an as-of change, a link between memories, an
agent's signal, a record of the log); a person reads text. The versions named are read in one
batch per page (``Reads.named``: one query of each kind, however many rows), and each id is
shown with a snippet of the text of its version concerned, or of its latest version, escaped
as every text is. An erased one says so; one out of the caller's reach shows its id only, as
if it did not exist.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from ..memory import Caller, Core, VersionRow

SNIPPET = 80  # characters of a memory's text shown beside its id


class Snippet(NamedTuple):
    text: str
    erased: bool = False


def snippet(row: VersionRow) -> Snippet:
    """The start of a version's text on one line, cut at ``SNIPPET`` characters."""
    if row.erased or row.content is None:
        return Snippet("erased", erased=True)
    text = " ".join(row.content.split())
    if len(text) > SNIPPET:
        text = text[: SNIPPET - 1].rstrip() + "…"
    return Snippet(text)


class Snippets:
    """Snippets of the versions a page names, read at once: ``of(memory_id)`` is the latest
    version's, ``of(memory_id, version_id=...)`` or ``of(memory_id, number=...)`` the version
    concerned (the latest when that one is not found)."""

    def __init__(
        self,
        core: Core,
        caller: Caller,
        *,
        memory_ids: Iterable[str] = (),
        version_ids: Iterable[str] = (),
        numbered: Iterable[tuple[str, int]] = (),
    ) -> None:
        named = core.reads.named(
            caller,
            latest_of=[*dict.fromkeys(memory_ids)],
            version_ids=[*dict.fromkeys(version_ids)],
            numbered=[*dict.fromkeys(numbered)],
        )
        self._latest = {k: snippet(v) for k, v in named.latest.items()}
        # A version is shown only beside its own memory's id.
        self._versions = {(v.memory_id, k): snippet(v) for k, v in named.versions.items()}
        self._numbered = {k: snippet(v) for k, v in named.numbered.items()}

    def of(
        self, memory_id: str, version_id: str | None = None, number: int | None = None
    ) -> Snippet | None:
        found = None
        if version_id is not None:
            found = self._versions.get((memory_id, version_id))
        if found is None and number is not None:
            found = self._numbered.get((memory_id, number))
        return found if found is not None else self._latest.get(memory_id)
