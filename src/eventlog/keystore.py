"""Per-subject data keys, kept apart from the log so that destroying one really erases: the
``KeyStore`` port (``keys_port.py``) in an LMDB environment of the data dir.

A subject is whatever personal data is erased as one unit: a memory chain, a container (a
user's queries and excerpts), a document. Its sealed fields in the log become unreadable the
moment its key is gone. Destroying a key deletes it, records a tombstone (a hash of the subject
name, so the subject can never silently get a new key) and compacts the store: LMDB leaves
deleted values in freed pages, and only a compacting copy swapped in atomically removes them.
The store is compacted at every open too, so a crash between a delete and its compaction
cannot leave a key behind.

A subject may also be *re-keyed* (``rekey``): its readable fields re-sealed under a new
generation of it (``memory:<id>#2``), recorded here as a map from each old field (its subject
and nonce) to its new ciphertext, and the old generation's key destroyed. What was left out
of the re-sealing is then gone, the rest stays readable. It is how one version of a chain is
erased while the rest of the chain lives on (``docs/erasure.md``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import lmdb

from ..errors import LogClosed
from ..fsync import fsync_path
from .keys_base import GENERATION_MARK, KEY_SIZE, CachedKeys, erased, field_id, tombstone
from .keys_port import KeyStoreContents
from .lmdb_env import open_env, storage_failure

__all__ = ["GENERATION_MARK", "KEY_SIZE", "LmdbKeyStore"]

_MAP_SIZE = 16 << 20
_COMPACT_SUFFIX = ".compact"


class LmdbKeyStore(CachedKeys):
    """Subject keys in their own small LMDB environment (``keys/`` in the data dir).

    Like the log, it stops taking writes after a failed commit (fail-stop): a key acknowledged
    but not durable would make its sealed fields unreadable after a crash.
    """

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        """``readonly`` reads the keys beside the store's owner (a replay beside the server):
        no compaction at open, and no key is made or destroyed."""
        super().__init__(LogClosed("the key store was opened read-only") if readonly else None)
        self._path = path
        self._open(readonly=readonly)
        try:
            if not readonly:
                self._compact()
        except lmdb.Error as exc:
            self._env.close()
            raise storage_failure(exc) from exc
        except BaseException:
            self._env.close()
            raise
        self._start_writer("mnemolog-key-writer")

    def _open(self, *, readonly: bool = False) -> None:
        self._env: lmdb.Environment = open_env(
            self._path, map_size=_MAP_SIZE, max_dbs=4, readonly=readonly
        )
        try:
            if readonly:  # handles opened in a read transaction die with it: none here
                self._keys = self._env.open_db(b"keys", create=False)
                self._tombstones = self._env.open_db(b"tombstones", create=False)
                # A store that was never re-keyed has neither table.
                self._generations = _optional_db(self._env, b"generations")
                self._resealed = _optional_db(self._env, b"resealed")
            else:
                with self._env.begin(write=True) as txn:
                    self._keys = self._env.open_db(b"keys", txn=txn)
                    self._tombstones = self._env.open_db(b"tombstones", txn=txn)
                    self._generations = self._env.open_db(b"generations", txn=txn)
                    self._resealed = self._env.open_db(b"resealed", txn=txn)
            self._current = self._read_generations()
        except lmdb.Error as exc:
            self._env.close()
            raise storage_failure(exc) from exc

    def _load(self, subject: str) -> bytes | None:
        with self._env.begin(db=self._keys) as txn:
            raw = txn.get(subject.encode())
        return None if raw is None else bytes(raw)

    def is_destroyed(self, subject: str) -> bool:
        """Whether the subject was erased (a re-keyed subject lives on in its generation)."""
        current = self.current(subject)
        with self._lock, self._env.begin(db=self._tombstones) as txn:
            return txn.get(tombstone(current)) is not None

    def resealed(self, subject: str, nonce: bytes) -> bytes | None:
        """The new ciphertext (encoded) of a field re-sealed when its subject was re-keyed."""
        if self._resealed is None:
            return None
        with self._env.begin(db=self._resealed) as txn:
            raw = txn.get(field_id(subject, nonce))
        return None if raw is None else bytes(raw)

    def rekey(
        self, subject: str, generation: str, moved: Sequence[tuple[str, bytes, bytes]]
    ) -> None:
        """Record ``moved`` (each old field's subject, nonce and new encoded ciphertext, sealed
        under ``generation``) and make ``generation`` the subject's current one, in one durable
        commit; then destroy every older generation's key. Only what was moved stays readable."""
        with self._lock:
            if self._failure is not None:
                raise self._failure
            older = [subject, *self._generations_of(subject, below=generation)]
            try:
                with self._env.begin(write=True) as txn:
                    for old_subject, nonce, new in moved:
                        txn.put(field_id(old_subject, nonce), new, db=self._resealed)
                    txn.put(subject.encode(), generation.encode(), db=self._generations)
            except lmdb.Error as exc:
                self._failure = storage_failure(exc)
                raise self._failure from exc
            self._current[subject] = generation
        self._destroy_keys(older)

    def destroy(self, subject: str) -> bool:
        """Destroy the subject's key, and those of all its generations, and compact the
        store; True if a key existed."""
        return self._destroy_keys([subject, *self._generations_of(subject, below=None)])

    def erase(self, subjects: Sequence[str], *, renewed: Sequence[str] = ()) -> None:
        """Destroy the keys of ``subjects`` and of ``renewed``, every generation of each, in
        one durable commit and one compaction (an erasure of thousands of subjects). Each of
        ``renewed`` seals under a fresh generation from then on: a container written to after
        its erasure is a new subject, none of whose fields the old keys opened."""
        fresh = {subject: self.next_generation(subject) for subject in renewed}
        doomed = [
            name
            for subject in [*subjects, *renewed]
            for name in (subject, *self._generations_of(subject, below=None))
        ]
        self._destroy_keys(doomed, fresh)

    def _destroy_keys(
        self, subjects: Sequence[str], generations: Mapping[str, str] | None = None
    ) -> bool:
        """Delete ``subjects``' keys and tombstone them; ``generations`` (subject: its new
        generation's name) made current in the same commit."""
        with self._lock:
            if self._failure is not None:
                raise self._failure
            existed = False
            try:
                with self._env.begin(write=True) as txn:
                    self._forget(subjects)
                    for subject in subjects:
                        existed = bool(txn.delete(subject.encode(), db=self._keys)) or existed
                        txn.put(tombstone(subject), b"", db=self._tombstones)
                    for subject, generation in (generations or {}).items():
                        txn.put(subject.encode(), generation.encode(), db=self._generations)
            except lmdb.Error as exc:
                self._failure = storage_failure(exc)
                raise self._failure from exc
            self._current.update(generations or {})
            self._compact()
        return existed

    def _read_generations(self) -> dict[str, str]:
        if self._generations is None:
            return {}
        with self._env.begin(db=self._generations) as txn:
            return {bytes(k).decode(): bytes(v).decode() for k, v in txn.cursor()}

    def export(self) -> KeyStoreContents:
        """Every key, tombstone, generation and re-sealed field: what a copy of this store
        into another must hold (read in one transaction, so consistent)."""
        with self._lock, self._env.begin() as txn:
            keys, tombs, gens, moved = (
                _items(txn, db)
                for db in (self._keys, self._tombstones, self._generations, self._resealed)
            )
        return KeyStoreContents.of(
            ((k.decode(), v) for k, v in keys),
            (k for k, _ in tombs),
            ((k.decode(), v.decode()) for k, v in gens),
            moved,
        )

    def refresh(self) -> None:
        """Nothing to catch up with: only this process changes this store."""

    def close(self) -> None:
        self._creator.close()
        with self._lock:
            if self._unused and self._failure is None:
                # Keys made ahead and never used. Deleted only here, followed by a compaction:
                # a transaction that frees pages can leave the file shorter than its meta page
                # says (pages allocated and freed in one commit are never written), which the
                # preflight of the next open would take for a truncation. A crash first
                # leaves harmless orphans: they sealed nothing.
                try:
                    with self._env.begin(write=True, db=self._keys) as txn:
                        for subject in self._unused:
                            txn.delete(subject.encode())
                    self._unused.clear()
                    self._compact()
                except lmdb.Error:
                    pass
            self._env.close()

    def _create_batch(self, subjects: Sequence[str]) -> list[bytes | BaseException]:
        out: list[bytes | BaseException] = []
        with self._lock:
            if self._failure is not None:
                raise self._failure
            self._unused -= set(subjects)
            while True:
                try:
                    with self._env.begin(write=True) as txn:
                        out = [self._create(txn, subject) for subject in subjects]
                    break
                except lmdb.MapFullError:
                    self._env.set_mapsize(int(self._env.info()["map_size"]) * 2)
                except lmdb.Error as exc:
                    self._failure = storage_failure(exc)
                    raise self._failure from exc
            self._created(subjects, out)
        return out

    def _create(self, txn: lmdb.Transaction, subject: str) -> bytes | BaseException:
        if txn.get(tombstone(subject), db=self._tombstones) is not None:
            return erased(subject)
        existing = txn.get(subject.encode(), db=self._keys)
        if existing is not None:
            return bytes(existing)
        key = os.urandom(KEY_SIZE)
        txn.put(subject.encode(), key, db=self._keys)
        return key

    def _compact(self) -> None:
        """Replace the store by a compacting copy of itself, atomically."""
        staging = self._path.with_name(self._path.name + _COMPACT_SUFFIX)
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(mode=0o700)
        self._env.copy(str(staging), compact=True)
        os.chmod(staging / "data.mdb", 0o600)
        fsync_path(staging / "data.mdb")
        self._env.close()
        os.replace(staging / "data.mdb", self._path / "data.mdb")
        fsync_path(self._path)
        shutil.rmtree(staging)
        self._open()


def _optional_db(env: lmdb.Environment, name: bytes) -> lmdb._Database | None:
    try:
        return env.open_db(name, create=False)
    except lmdb.NotFoundError:
        return None


def _items(txn: lmdb.Transaction, db: lmdb._Database | None) -> list[tuple[bytes, bytes]]:
    """A table's pairs, none for a table never made."""
    return [] if db is None else [(bytes(k), bytes(v)) for k, v in txn.cursor(db=db)]
