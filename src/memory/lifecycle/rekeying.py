"""Re-keying a subject: every field still sealed under it is sealed again under a new
generation of its key, but those left out, and the old generation is destroyed (see
``docs/erasure.md``). Erasing one version of a chain, or a profile sealed under its container's
key, takes that part of a subject and leaves the rest readable."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import msgspec

from ...eventlog import KeyStore, Sealer
from ...eventlog.events import AnyEvent, Sealed
from ...eventlog.keystore import GENERATION_MARK
from ...eventlog.sealing import encode_sealed

# Event fields that name another version: the evidence of such an event holds its words.
_VERSION_FIELDS = ("supersedes_version_id", "target_version_id")


def rekey_keeping(keys: KeyStore, sealer: Sealer, subject: str, fields: Iterable[Sealed]) -> None:
    """Seal again, under a new generation of ``subject``, each of ``fields`` sealed under it
    (or an older generation) that still opens; then destroy every older generation."""
    generation = keys.next_generation(subject)
    moved: list[tuple[str, bytes, bytes]] = []
    for sealed in fields:
        if not under(sealed, subject):
            continue
        plaintext = sealer.open(sealed)
        if plaintext is not None:
            new = sealer.seal(generation, plaintext)
            moved.append((sealed.subject, sealed.nonce, encode_sealed(new)))
    keys.rekey(subject, generation, moved)


def under(sealed: Sealed, subject: str) -> bool:
    """Whether ``sealed`` was sealed under ``subject`` or one of its generations."""
    return sealed.subject == subject or sealed.subject.startswith(subject + GENERATION_MARK)


def kept_fields(event: AnyEvent, version_id: str = "") -> Iterator[Sealed]:
    """The sealed fields of an event that hold nothing of version ``version_id`` (all of them,
    without one)."""
    if getattr(event, "version_id", None) == version_id:
        return  # the version itself (or a dedup, a link, a ruling made by it)
    about = any(getattr(event, name, None) == version_id for name in _VERSION_FIELDS)
    for name in event.__struct_fields__:
        value = getattr(event, name)
        if isinstance(value, Sealed):
            yield value
        elif not about and isinstance(value, msgspec.Struct | list):
            # nested: a supersede's or a link's evidence, a re-embedded vector
            yield from _sealed_fields(value, version_id)


def _sealed_fields(value: msgspec.Struct | list[object], version_id: str) -> Iterator[Sealed]:
    """Every sealed field of a value, nested ones included, but those of a nested part about
    version ``version_id`` (its re-embedded vector)."""
    if getattr(value, "version_id", None) == version_id:
        return
    items = (
        value if isinstance(value, list) else [getattr(value, f) for f in value.__struct_fields__]
    )
    for item in items:
        if isinstance(item, Sealed):
            yield item
        elif isinstance(item, msgspec.Struct | list):
            yield from _sealed_fields(item, version_id)
