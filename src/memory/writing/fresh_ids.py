"""Ids for new chains whose keys are already durable, made ahead in batches.

Every new memory chain needs its own key (crypto-shredding), and that key must be on disk
before the event it seals: otherwise a crash could leave an acknowledged write unreadable.
Making the key inside the write would cost each write a second durable commit (the key store
is its own LMDB environment), so keys are made ahead: a background thread keeps a pool of ids
whose keys are committed, in one commit per batch, and a write takes ids from it. Ids a write
did not use (its items became dedups or supersedes) go back to the pool.

Pooled keys seal nothing, so losing the pool costs nothing but bytes: the ids left at a clean
close are discarded, and those left by a crash are harmless orphans in the key store.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence

from ...eventlog import KeyStore

DEFAULT_BATCH = 256
DEFAULT_LOW_WATER = 64
MAX_BATCH = 1024


class FreshIds:
    def __init__(
        self,
        keys: KeyStore,
        *,
        prefix: str,
        subject: Callable[[str], str],
        batch: int = DEFAULT_BATCH,
        low_water: int = DEFAULT_LOW_WATER,
    ) -> None:
        self._keys = keys
        self._prefix = prefix
        self._subject = subject
        self._refill_size = batch  # grows to the largest write seen, up to MAX_BATCH
        self._low_water = low_water
        self._pool: list[str] = []
        self._wanted = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._refill, name="mnemolog-fresh-ids", daemon=True)
        self._thread.start()

    def take(self, count: int) -> list[str]:
        """``count`` ids with durable keys; made here, in one commit, if the pool runs short."""
        with self._wanted:
            start = max(0, len(self._pool) - count)
            taken = self._pool[start:]
            del self._pool[start:]
            # Refill by at least what a write asks for, so a client sending big batches finds
            # its next batch's keys made while this one is written.
            self._refill_size = min(max(self._refill_size, count), MAX_BATCH)
            if len(self._pool) < max(self._low_water, self._refill_size):
                self._wanted.notify()
        missing = self._make(count - len(taken))
        return taken + missing

    def give_back(self, ids: Sequence[str]) -> None:
        """Ids taken but not used: their keys sealed nothing and serve a later write."""
        with self._wanted:
            self._pool.extend(ids)

    def close(self) -> None:
        """Stop refilling and drop the pooled keys (they are deleted with the key store's
        next commit or at its close)."""
        with self._wanted:
            self._closed = True
            self._wanted.notify()
        self._thread.join()
        with self._wanted:
            self._keys.discard([self._subject(i) for i in self._pool])
            self._pool.clear()

    def _make(self, count: int) -> list[str]:
        if count <= 0:
            return []
        ids = [f"{self._prefix}_{uuid.uuid4().hex}" for _ in range(count)]
        self._keys.create_many([self._subject(i) for i in ids])
        return ids

    def _refill(self) -> None:
        while True:
            with self._wanted:
                while not self._closed and len(self._pool) >= max(
                    self._low_water, self._refill_size
                ):
                    self._wanted.wait()
                if self._closed:
                    return
                size = self._refill_size
            try:
                made = self._make(size)
            except Exception:  # the key store is failed: writes report it when they make keys
                return
            with self._wanted:
                self._pool.extend(made)
