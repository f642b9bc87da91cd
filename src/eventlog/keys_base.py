"""What every key store shares: the cache of keys and AES contexts in front of its storage,
creation through one writer thread, and the names of a subject's generations.

A subclass reads one key (``_load``), creates a batch (``_create_batch``) and does the rest of
the ``KeyStore`` port its own way. Every change to the caches happens under ``_lock``, held
while a key is read and cached, so a destroy cannot be undone by a read racing it.
"""

from __future__ import annotations

import hashlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ..errors import KeyDestroyed, StorageError
from .groupcommit import GroupCommitter

KEY_SIZE = 32
# Subjects whose AES-GCM context is kept ready. Making one from the key costs 3.5 us, three
# times an 80-byte decrypt, and a write seals two fields and its projections open four.
CIPHER_CACHE = 4096
GENERATION_MARK = "#"  # memory:<id>#2: the second key of a re-keyed subject


class CachedKeys(ABC):
    """The read side and creation of a key store, over a subclass's storage."""

    def __init__(self, failure: StorageError | None) -> None:
        self._lock = threading.RLock()
        self._cache: dict[str, bytes] = {}
        self._ciphers: dict[str, AESGCM] = {}  # for the subjects of ``_cache`` used lately
        self._unused: set[str] = set()
        self._failure = failure
        self._current: dict[str, str] = {}  # subject: its generation, for re-keyed ones

    def _start_writer(self, name: str) -> None:
        """Start the thread that creates keys; once the storage is open."""
        self._creator: GroupCommitter[str, bytes] = GroupCommitter(self._create_batch, name=name)

    @abstractmethod
    def _load(self, subject: str) -> bytes | None:
        """The subject's key as stored (called under ``_lock``)."""

    @abstractmethod
    def _create_batch(self, subjects: Sequence[str]) -> list[bytes | BaseException]:
        """Each subject's key, made durably if missing, or ``KeyDestroyed`` for it."""

    @property
    def failure(self) -> StorageError | None:
        return self._failure

    def key_for(self, subject: str) -> bytes | None:
        """The subject's key, or None if it never had one or it was destroyed."""
        cached = self._cache.get(subject)
        if cached is not None:
            return cached
        with self._lock:  # held while caching, so a concurrent destroy cannot be undone
            if subject in self._unused:
                return None
            key = self._load(subject)
            if key is not None:
                self._cache[subject] = key
            return key

    def cipher_for(self, subject: str) -> AESGCM | None:
        """An AES-GCM context under the subject's key, or None if it has no key."""
        cipher = self._ciphers.get(subject)
        if cipher is not None:
            return cipher
        key = self.key_for(subject)
        return None if key is None else self._cipher(subject, key)

    def ensure_cipher(self, subject: str) -> AESGCM:
        """``cipher_for``, the key created first if the subject has none (see ``ensure``)."""
        cipher = self._ciphers.get(subject)
        if cipher is not None:
            return cipher
        return self._cipher(subject, self.ensure(subject))

    def _cipher(self, subject: str, key: bytes) -> AESGCM:
        cipher = AESGCM(key)
        with self._lock:  # kept only while the key is, so a destroy cannot be undone
            if self._cache.get(subject) is key:
                if len(self._ciphers) >= CIPHER_CACHE:
                    del self._ciphers[next(iter(self._ciphers))]
                self._ciphers[subject] = cipher
        return cipher

    def ensure(self, subject: str) -> bytes:
        """The subject's key, created durably if it has none; ``KeyDestroyed`` if erased."""
        key = self.key_for(subject)
        if key is not None:
            return key
        if self._failure is not None:
            raise self._failure
        return self._creator.submit(subject).result()

    def ensure_many(self, subjects: Sequence[str]) -> list[bytes]:
        """Keys for many subjects, the missing ones created together in one durable commit."""
        if self._failure is not None and any(self.key_for(s) is None for s in subjects):
            raise self._failure
        futures = {s: self._creator.submit(s) for s in subjects if self.key_for(s) is None}
        return [futures[s].result() if s in futures else self.ensure(s) for s in subjects]

    def create_many(self, subjects: Sequence[str]) -> list[bytes]:
        """Keys for subjects never seen before (fresh random ids), created in one durable
        commit without looking each one up first (the commit still keeps an existing key)."""
        if self._failure is not None:
            raise self._failure
        futures = [self._creator.submit(s) for s in subjects]
        return [future.result() for future in futures]

    def discard(self, subjects: Sequence[str]) -> None:
        """Drop keys made ahead of time and never used: they sealed nothing, and losing this
        request in a crash costs only a few bytes. They are deleted at ``close``."""
        with self._lock:
            self._forget(subjects)
            self._unused.update(subjects)

    def _forget(self, subjects: Sequence[str]) -> None:
        """Drop the cached keys and contexts of ``subjects`` (called under ``_lock``)."""
        for subject in subjects:
            self._cache.pop(subject, None)
            self._ciphers.pop(subject, None)

    def _created(self, subjects: Sequence[str], out: Sequence[bytes | BaseException]) -> None:
        """Cache the keys a batch made or found (called under ``_lock``)."""
        for subject, result in zip(subjects, out, strict=True):
            if isinstance(result, bytes):
                self._cache[subject] = result

    def current(self, subject: str) -> str:
        """The generation of ``subject`` new fields are sealed under: itself until re-keyed."""
        return self._current.get(subject, subject)

    def next_generation(self, subject: str) -> str:
        """The name the next ``rekey`` of ``subject`` seals under."""
        return generation_after(subject, self.current(subject))

    def _generations_of(self, subject: str, *, below: str | None) -> list[str]:
        """The generation names of ``subject`` up to its current one (or below ``below``)."""
        return generations_up_to(subject, self.current(subject), below=below)


def generation_after(subject: str, current: str) -> str:
    """The generation that follows ``current``, a generation of ``subject``."""
    _, _, number = current.rpartition(GENERATION_MARK)
    generation = int(number) + 1 if current != subject and number.isdigit() else 2
    return f"{subject}{GENERATION_MARK}{generation}"


def generations_up_to(subject: str, current: str, *, below: str | None) -> list[str]:
    """The generation names of ``subject`` from #2 to ``current`` (or below ``below``)."""
    if current == subject:
        return []
    last = int(current.rpartition(GENERATION_MARK)[2])
    if below is not None:
        last = min(last, int(below.rpartition(GENERATION_MARK)[2]) - 1)
    return [f"{subject}{GENERATION_MARK}{n}" for n in range(2, last + 1)]


def field_id(subject: str, nonce: bytes) -> bytes:
    """How a re-sealed field is found: its old subject and nonce."""
    return subject.encode() + b"\0" + nonce


def tombstone(subject: str) -> bytes:
    """What an erased subject leaves: a hash of its name, not the name."""
    return hashlib.sha256(subject.encode()).digest()


def erased(subject: str) -> KeyDestroyed:
    return KeyDestroyed(f"subject {subject!r} was erased; it cannot be written again")
