"""The ``KeyStore`` on PostgreSQL: subject keys in tables beside the log, shared by every node.

Tables of the log's schema: ``keys`` (subject, 32-byte key), ``key_tombstones`` (SHA-256 of an
erased subject's name), ``key_generations`` (a re-keyed subject's current generation),
``key_resealed`` (a re-sealed field's new ciphertext, by old subject and nonce) and the
one-row ``key_epoch`` (a counter of the changes that destroy keys, and how far the ``keys``
table was compacted). Semantics are the LMDB store's (``keystore.py``): a key is committed
before anything is sealed under it, concurrent creations of a node share one transaction,
concurrent first uses of a subject on any node get one key, and an erased subject never gets a
new one. Creations take a shared advisory lock and destroys an exclusive one, so no creation
can miss a tombstone committed while it ran.

Each node caches keys and AES contexts (opening fields is hot). A destroy, an erasure or a
re-keying bumps ``key_epoch`` and sends its value on the ``<schema>_keys`` channel in the same
transaction; every store's listener thread (LISTEN, and a poll of the epoch every
``poll_interval``, since a notification can be lost) clears its caches and re-reads the
generations when the epoch moves. ``is_destroyed`` and creation always ask the database.

Destroying a key deletes its row and writes its tombstone in one transaction, then rewrites
the ``keys`` table with ``VACUUM FULL`` (a plain VACUUM leaves a dead row's bytes in the page;
VACUUM FULL writes the live rows into a new file and truncates the old one), switches to a new
WAL segment and asks for a ``CHECKPOINT`` (these two skipped without the privileges: superuser,
or EXECUTE on ``pg_switch_wal`` and the ``pg_checkpoint`` role). A rewrite cut off by a crash
is run again when a store next opens (``key_epoch.compacted`` lags ``n``). What stays, and for
how long:

- **The WAL.** A key was written to the write-ahead log when it was made (and again in a
  full-page image when its page is next changed after a checkpoint). A segment is removed by
  the first checkpoint whose redo point is past it: at once after the switch and checkpoint
  above; without them, once the WAL has moved on to a new segment (16 MB of writes, or
  ``archive_timeout``) and the server's next checkpoint came (``checkpoint_timeout``, 5
  minutes by default). ``wal_keep_size``, a replication slot or a lagging archiver holds
  segments longer. With ``wal_recycle = on`` (the default) an old segment is renamed for
  reuse, its bytes kept until overwritten: set ``wal_recycle = off`` so it is deleted.
- **Archives and backups.** A WAL archive (``archive_command``) and a base backup or dump
  taken before the erasure hold the key for as long as they are kept: expire them on the
  schedule personal data must be erased by, or the erasure does not reach them.
- **Old snapshots.** A transaction open since before the erasure keeps the deleted row
  visible, and VACUUM FULL copies it; the next erasure's rewrite takes it.

The key bytes are never logged; a server logging statement parameters
(``log_parameter_max_length``) would write them to its log.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

from ..errors import InvalidInput, LogClosed, StorageFailed
from .keys_base import (
    KEY_SIZE,
    CachedKeys,
    erased,
    field_id,
    generation_after,
    generations_up_to,
    tombstone,
)
from .keys_port import KeyStoreContents
from .pg_listening import Listener
from .postgres_keys_sql import DDL, KeyQueries
from .postgres_log_sql import DEFAULT_POLL_INTERVAL, DEFAULT_SCHEMA, SCHEMA_NAME

__all__ = ["PostgresKeyStore"]

logger = logging.getLogger(__name__)

Conn = psycopg.Connection[TupleRow]
T = TypeVar("T")


class PostgresKeyStore(CachedKeys):
    """Subject keys in the tables of one PostgreSQL schema (the log's)."""

    def __init__(
        self,
        url: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        readonly: bool = False,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        connect_timeout: float = 10.0,
        listen: bool = True,
    ) -> None:
        """``readonly`` makes and destroys no key (a replay beside a node); ``listen`` False
        follows other nodes by polling alone (a pooler that drops notifications)."""
        if not SCHEMA_NAME.fullmatch(schema):
            raise InvalidInput(f"a key store schema is a lowercase SQL name, not {schema!r}")
        super().__init__(LogClosed("the key store was opened read-only") if readonly else None)
        self._url = url
        self._schema = schema
        self._channel = f"{schema}_keys"
        self._lock_name = f"mnemolog-keys:{schema}"
        self._poll_interval = poll_interval
        self._connect_timeout = connect_timeout
        self._q = KeyQueries(schema)
        try:
            with self._connect() as conn:
                _create_tables(conn, schema)
                self._epoch, compacted = self._read_epoch(conn)
                self._current = self._read_generations(conn)
        except psycopg.Error as exc:
            raise StorageFailed(f"cannot read the key store's database: {exc}") from exc
        if compacted < self._epoch and not readonly:
            self._compact()  # a destroy whose rewrite a crash cut off
        self._reader = _Session(self._connect)
        self._writer = _Session(self._connect)
        self._closed = False
        # Another node's destroy, erase or rekey moves the epoch: this store's caches go.
        self._listener = Listener(
            lambda: self._connect(listener=True),
            self._channel,
            self._follow,
            poll_interval=poll_interval,
            name="mnemolog-key-listener",
            listen=listen,
        )
        self._start_writer("mnemolog-key-writer")

    def _connect(self, *, listener: bool = False) -> Conn:
        role = "mnemolog-keys-listener" if listener else "mnemolog-keys"
        try:
            return psycopg.connect(
                self._url,
                autocommit=True,  # every transaction is an explicit block: none left open
                connect_timeout=int(self._connect_timeout),
                application_name=f"{role}:{self._schema}",
            )
        except psycopg.Error as exc:
            raise StorageFailed(f"cannot reach the key store's database: {exc}") from exc

    # --- reading -------------------------------------------------------------------------

    def _load(self, subject: str) -> bytes | None:
        row = self._reader.run(
            lambda c: c.execute(self._q.load, (subject,)).fetchone(), "cannot read a key"
        )
        return None if row is None else bytes(row[0])

    def is_destroyed(self, subject: str) -> bool:
        """Whether the subject was erased (a re-keyed subject lives on in its generation)."""
        row = self._reader.run(
            lambda c: c.execute(self._q.is_destroyed, {"subject": subject}).fetchone(),
            "cannot read a tombstone",
        )
        return row is not None and bool(row[0])

    def resealed(self, subject: str, nonce: bytes) -> bytes | None:
        """The new ciphertext (encoded) of a field re-sealed when its subject was re-keyed."""
        row = self._reader.run(
            lambda c: c.execute(self._q.resealed, (field_id(subject, nonce),)).fetchone(),
            "cannot read a re-sealed field",
        )
        return None if row is None else bytes(row[0])

    def refresh(self) -> None:
        """Catch up with other nodes' changes now, rather than at the next NOTIFY or poll."""
        self._reader.run(self._follow, "cannot read the key epoch")

    def export(self) -> KeyStoreContents:
        """Everything the store holds, read in one snapshot."""
        return self._reader.run(self._export, "cannot read the key store")

    def _export(self, conn: Conn) -> KeyStoreContents:
        q = self._q
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            keys = [(str(s), bytes(k)) for s, k in conn.execute(q.all_keys)]
            tombs = [bytes(d) for (d,) in conn.execute(q.all_tombstones)]
            gens = [(str(s), str(g)) for s, g in conn.execute(q.all_generations)]
            moved = [(bytes(f), bytes(ct)) for f, ct in conn.execute(q.all_resealed)]
        return KeyStoreContents.of(keys, tombs, gens, moved)

    # --- creating ------------------------------------------------------------------------

    def _create_batch(self, subjects: Sequence[str]) -> list[bytes | BaseException]:
        with self._lock:  # held to the cache: a destroy of this node cannot slip in between
            if self._failure is not None:
                raise self._failure
            self._unused -= set(subjects)
            found = self._writer.run(
                lambda c: self._create(c, list(dict.fromkeys(subjects))),
                "the key store's database refused new keys",
            )
            out: list[bytes | BaseException] = [found.get(s) or erased(s) for s in subjects]
            self._created(subjects, out)
        return out

    def _create(self, conn: Conn, subjects: list[str]) -> dict[str, bytes]:
        q = self._q
        with conn.transaction():
            conn.execute(q.lock_shared, (self._lock_name,))
            digests = [tombstone(s) for s in subjects]
            gone = {bytes(d) for (d,) in conn.execute(q.tombstoned, (digests,))}
            live = [s for s in subjects if tombstone(s) not in gone]
            # Another node making the same subject's key now: ours waits for its commit,
            # inserts nothing, and the select below reads the key it made.
            conn.execute(q.insert_keys, (live, [os.urandom(KEY_SIZE) for _ in live]))
            found = {str(s): bytes(k) for s, k in conn.execute(q.keys_of, (live,))}
        if gone:
            # Erased, perhaps by another node a moment ago: catch up with it now, so that a
            # retry seals under the generation the erasure renewed (else the listener will).
            with contextlib.suppress(psycopg.Error):
                self._follow(conn)
        return found

    def import_contents(self, contents: KeyStoreContents) -> None:
        """Copy another store's contents into this empty one, in one transaction; refused
        (``InvalidInput``) unless every key table is empty."""
        if self._failure is not None:
            raise self._failure
        self._writer.run(lambda c: self._import(c, contents), "the key store refused the copy")

    def _import(self, conn: Conn, contents: KeyStoreContents) -> None:
        q = self._q
        with conn.transaction():
            conn.execute(q.lock, (self._lock_name,))
            row = conn.execute(q.holds_anything).fetchone()
            if row is not None and row[0]:
                raise InvalidInput("the key store in the database is not empty")
            with conn.cursor() as cur:
                for copy, rows in (
                    (q.copy_keys, contents.keys),
                    (q.copy_tombstones, [(d,) for d in contents.tombstones]),
                    (q.copy_generations, contents.generations),
                    (q.copy_resealed, contents.resealed),
                ):
                    with cur.copy(copy) as out:
                        for values in rows:
                            out.write_row(values)
        with self._lock:
            self._current = dict(contents.generations)

    # --- destroying ----------------------------------------------------------------------

    def destroy(self, subject: str) -> bool:
        """Destroy the subject's key, and those of all its generations, and rewrite the keys
        table; True if a key existed."""
        return self._destroy([subject], [])

    def erase(self, subjects: Sequence[str], *, renewed: Sequence[str] = ()) -> None:
        """Destroy the keys of ``subjects`` and of ``renewed``, every generation of each, in
        one transaction and one rewrite; each of ``renewed`` seals under a fresh generation
        from then on."""
        self._destroy(subjects, renewed)

    def rekey(
        self, subject: str, generation: str, moved: Sequence[tuple[str, bytes, bytes]]
    ) -> None:
        """Record ``moved``, make ``generation`` current and destroy every older generation's
        key, in one transaction. Only what was moved stays readable."""
        self._destroy([], [], rekeyed=(subject, generation, moved))

    def _destroy(
        self,
        subjects: Sequence[str],
        renewed: Sequence[str],
        *,
        rekeyed: tuple[str, str, Sequence[tuple[str, bytes, bytes]]] | None = None,
    ) -> bool:
        with self._lock:
            if self._failure is not None:
                raise self._failure
            change = _Change(subjects, renewed, rekeyed)
            try:
                existed, epoch = self._writer.run(
                    lambda c: self._commit_change(c, change), "the key store refused an erasure"
                )
            finally:  # also when the commit's outcome is unknown: the database decides
                self._forget(change.doomed)
            self._current.update(change.generations)
            if epoch == self._epoch + 1:  # no other node's change skipped over
                self._epoch = epoch
        self._compact()
        return existed

    def _commit_change(self, conn: Conn, change: _Change) -> tuple[bool, int]:
        q = self._q
        with conn.transaction():
            conn.execute(q.lock, (self._lock_name,))
            change.decide(dict(conn.execute(q.generations_of, (change.named,)).fetchall()))
            if change.moved:
                conn.execute(q.put_resealed, (list(change.moved), list(change.moved.values())))
            deleted = conn.execute(q.delete_keys, (change.doomed,)).fetchall()
            conn.execute(q.put_tombstones, ([tombstone(name) for name in change.doomed],))
            if change.generations:
                gens = change.generations
                conn.execute(q.put_generations, (list(gens), list(gens.values())))
            row = conn.execute(q.bump_epoch).fetchone()
            assert row is not None, "the epoch row is made with the tables"
            epoch = int(row[0])
            conn.execute(q.notify, (self._channel, str(epoch)))
        return bool(deleted), epoch

    def _compact(self) -> None:
        """Rewrite the keys table so deleted keys leave its files, then ask for a checkpoint."""
        warnings: list[str] = []

        def noticed(notice: psycopg.errors.Diagnostic) -> None:
            if notice.severity_nonlocalized == "WARNING":
                warnings.append(str(notice.message_primary))

        try:
            with self._connect() as conn:
                conn.add_notice_handler(noticed)
                conn.execute(self._q.vacuum_lock_timeout)
                epoch, _ = self._read_epoch(conn)  # every destroy committed by now is covered
                conn.execute(self._q.vacuum_keys)
                if warnings:  # VACUUM skips a table its role does not own, with a warning
                    raise StorageFailed(
                        f"the keys table was not rewritten ({'; '.join(warnings)}): deleted keys "
                        "stay in its file until its owner runs VACUUM FULL on it"
                    )
                conn.execute(self._q.mark_compacted, (epoch,))
                # A new WAL segment, then a checkpoint past the old ones, which removes them
                # (and the key written in them). Without the privileges the server does both
                # in its own time (see above).
                for step in ("SELECT pg_switch_wal()", "CHECKPOINT"):
                    with contextlib.suppress(psycopg.errors.InsufficientPrivilege):
                        conn.execute(step)
        except psycopg.Error as exc:
            raise StorageFailed(f"cannot rewrite the keys table: {exc}") from exc

    # --- following other nodes -------------------------------------------------------------

    def _follow(self, conn: Conn) -> None:
        epoch, _ = self._read_epoch(conn)
        if epoch <= self._epoch:
            return
        generations = self._read_generations(conn)  # read after the epoch: at least as new
        with self._lock:
            if epoch > self._epoch:
                self._cache.clear()
                self._ciphers.clear()
                self._current = generations
                self._epoch = epoch

    def _read_epoch(self, conn: Conn) -> tuple[int, int]:
        row = conn.execute(self._q.read_epoch).fetchone()
        assert row is not None, "the epoch row is made with the tables"
        return int(row[0]), int(row[1])

    def _read_generations(self, conn: Conn) -> dict[str, str]:
        return {str(s): str(g) for s, g in conn.execute(self._q.all_generations)}

    # --- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._creator.close()
        self._listener.close(timeout=self._poll_interval + self._connect_timeout + 5)
        with self._lock:
            if self._unused and self._failure is None:
                # Keys made ahead and never used: they sealed nothing, so no tombstone, no
                # rewrite. A failure here leaves harmless orphans.
                unused = list(self._unused)
                try:
                    self._writer.run(
                        lambda c: c.execute(self._q.delete_keys, (unused,)), "unused keys kept"
                    )
                except StorageFailed:
                    logger.warning("keys made ahead were left in the database")
                self._unused.clear()
            self._failure = LogClosed("the key store is closed")
        self._reader.close()
        self._writer.close()


class _Change:
    """What one destroying transaction does, decided from the generations it reads."""

    def __init__(
        self,
        subjects: Sequence[str],
        renewed: Sequence[str],
        rekeyed: tuple[str, str, Sequence[tuple[str, bytes, bytes]]] | None,
    ) -> None:
        self._subjects = [*subjects, *renewed]
        self._renewed = list(renewed)
        self._rekeyed = rekeyed
        self.named = [*self._subjects, *([rekeyed[0]] if rekeyed else [])]
        # Kept one per field, the last one: one statement may not update a row twice.
        self.moved: dict[bytes, bytes] = (
            {field_id(s, n): ct for s, n, ct in rekeyed[2]} if rekeyed else {}
        )
        self.doomed: list[str] = []
        self.generations: dict[str, str] = {}

    def decide(self, current: Mapping[str, str]) -> None:
        """The keys to destroy and the generations to make current, from each subject's
        current generation as the database holds it (another node may have moved it)."""
        now = {s: current.get(s, s) for s in self.named}
        self.doomed = [
            name for s in self._subjects for name in (s, *generations_up_to(s, now[s], below=None))
        ]
        self.generations = {s: generation_after(s, now[s]) for s in self._renewed}
        if self._rekeyed is not None:
            subject, generation, _ = self._rekeyed
            self.doomed += [subject, *generations_up_to(subject, now[subject], below=generation)]
            self.generations[subject] = generation


class _Session:
    """One connection, made when first needed and again after a failure."""

    def __init__(self, connect: Callable[[], Conn]) -> None:
        self._connect = connect
        self._conn: Conn | None = None
        self._lock = threading.Lock()
        self._closed = False

    def run(self, work: Callable[[Conn], T], failed: str) -> T:
        with self._lock:
            if self._closed:
                raise LogClosed("the key store is closed")
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = self._connect()
                return work(self._conn)
            except psycopg.Error as exc:
                # Broken, or cut mid-transaction: the next call starts on a new connection.
                if self._conn is not None:
                    self._conn.close()
                self._conn = None
                raise StorageFailed(f"{failed}: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()


def _create_tables(conn: Conn, schema: str) -> None:
    """The key tables and the epoch row, made once (under the advisory lock the log's tables
    are made under, since both make the schema)."""
    try:
        made = conn.execute("SELECT to_regclass(%s)", (f"{schema}.key_epoch",)).fetchone()
        if made is not None and made[0] is not None:
            return
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"mnemolog:{schema}",))
            conn.execute(sql.SQL(DDL).format(schema=sql.Identifier(schema)))
    except psycopg.Error as exc:
        raise StorageFailed(f"cannot make the key store's tables: {exc}") from exc
