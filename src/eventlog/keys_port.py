"""The ``KeyStore`` port: per-subject data keys, wherever they are kept.

Two stores implement it: ``LmdbKeyStore`` (``keys/`` in the data dir) and ``PostgresKeyStore``
(tables beside the PostgreSQL log, shared by every node). ``KeyStoreContents`` is what a store
hands out to be copied into another (``mnemolog migrate-log``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Protocol

import msgspec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ..errors import StorageError


class KeyStore(Protocol):
    """Subject keys: made on first use, destroyed for good (a tombstone), re-keyed by
    generation. Fail-stop: after a failed commit, ``failure`` is what every change raises."""

    @property
    def failure(self) -> StorageError | None: ...

    def key_for(self, subject: str) -> bytes | None:
        """The subject's key, or None if it never had one or it was destroyed."""
        ...

    def cipher_for(self, subject: str) -> AESGCM | None:
        """An AES-GCM context under the subject's key, or None if it has no key."""
        ...

    def ensure_cipher(self, subject: str) -> AESGCM:
        """``cipher_for``, the key created first if the subject has none (see ``ensure``)."""
        ...

    def ensure(self, subject: str) -> bytes:
        """The subject's key, created durably if it has none; ``KeyDestroyed`` if erased."""
        ...

    def ensure_many(self, subjects: Sequence[str]) -> list[bytes]:
        """Keys for many subjects, the missing ones created together in one durable commit."""
        ...

    def create_many(self, subjects: Sequence[str]) -> list[bytes]:
        """Keys for subjects never seen before (fresh random ids), created in one durable
        commit without looking each one up first (the commit still keeps an existing key)."""
        ...

    def discard(self, subjects: Sequence[str]) -> None:
        """Drop keys made ahead of time and never used; they are deleted at ``close``."""
        ...

    def is_destroyed(self, subject: str) -> bool:
        """Whether the subject was erased (a re-keyed subject lives on in its generation)."""
        ...

    def current(self, subject: str) -> str:
        """The generation of ``subject`` new fields are sealed under: itself until re-keyed."""
        ...

    def next_generation(self, subject: str) -> str:
        """The name the next ``rekey`` of ``subject`` seals under."""
        ...

    def resealed(self, subject: str, nonce: bytes) -> bytes | None:
        """The new ciphertext (encoded) of a field re-sealed when its subject was re-keyed."""
        ...

    def rekey(
        self, subject: str, generation: str, moved: Sequence[tuple[str, bytes, bytes]]
    ) -> None:
        """Record ``moved`` (each old field's subject, nonce and new encoded ciphertext, sealed
        under ``generation``), make ``generation`` current and destroy every older
        generation's key. Only what was moved stays readable."""
        ...

    def destroy(self, subject: str) -> bool:
        """Destroy the subject's key and those of all its generations, leaving no copy in the
        store's files; True if a key existed."""
        ...

    def erase(self, subjects: Sequence[str], *, renewed: Sequence[str] = ()) -> None:
        """Destroy the keys of ``subjects`` and ``renewed``, every generation of each, in one
        commit; each of ``renewed`` seals under a fresh generation from then on."""
        ...

    def refresh(self) -> None:
        """Catch up now with changes other nodes made (an erasure elsewhere): what a node
        does before it decides again after another node's append. A store only this process
        changes has nothing to catch up with."""
        ...

    def close(self) -> None: ...


class KeyStoreContents(msgspec.Struct, frozen=True):
    """Everything a key store holds, each part sorted: what a copy must reproduce."""

    keys: tuple[tuple[str, bytes], ...] = ()
    tombstones: tuple[bytes, ...] = ()
    generations: tuple[tuple[str, str], ...] = ()
    resealed: tuple[tuple[bytes, bytes], ...] = ()

    @classmethod
    def of(
        cls,
        keys: Iterable[tuple[str, bytes]],
        tombstones: Iterable[bytes],
        generations: Iterable[tuple[str, str]],
        resealed: Iterable[tuple[bytes, bytes]],
    ) -> KeyStoreContents:
        return cls(
            tuple(sorted(keys)),
            tuple(sorted(tombstones)),
            tuple(sorted(generations)),
            tuple(sorted(resealed)),
        )

    def counts(self) -> str:
        return (
            f"{len(self.keys)} keys, {len(self.tombstones)} tombstones, "
            f"{len(self.generations)} generations, {len(self.resealed)} re-sealed fields"
        )

    def digest(self) -> str:
        """SHA-256 over the sorted contents: two stores holding the same answer the same."""
        return hashlib.sha256(msgspec.msgpack.encode(self)).hexdigest()

    def is_empty(self) -> bool:
        return not (self.keys or self.tombstones or self.generations or self.resealed)
