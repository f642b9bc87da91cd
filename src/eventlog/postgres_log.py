"""The ``EventLog`` on PostgreSQL: one append-only table that several nodes share.

The records, their framing and their hash chain are the LMDB log's (``chain.py``,
``record.py``): ``log.data`` holds exactly the bytes LMDB stores under a seq, so an export and
``verify-log`` see the same bytes whichever backend wrote them.

One total order, one chain: every append takes the row lock of the single ``head`` row in its
transaction and assigns seqs and hashes after it, so appends of all nodes are serialised by
the database, and a transaction that rolls back consumed no seq. A node's concurrent writers
share one transaction (``GroupCommitter``): one round trip and one WAL flush per batch. A retry
with the same idempotency key is answered from the ``idempotency`` table, read under the same
lock, whichever node made the first append.

Other nodes' appends reach this node's ``wait_for`` by LISTEN/NOTIFY (the appending transaction
sends the new head seq on commit) and by a poll of the head row every ``poll_interval``
seconds: a notification can be lost with a connection, the poll cannot.

Each node decides writes against its own projections, so nodes take turns to decide about a
container (``hold``, ``pg_turns.py``): a node's turn holds the container's advisory lock from
before it decides until its appends are applied (and a little longer, for its next decision),
and begins by applying the log through the head read after the lock was granted. Two nodes
never decide about one container at once.

An append still carries the condition it was decided under (``conditions.py``), a safety net
that turns leave idle: the containers it was decided about and the seq the node had applied.
Under the head lock the ``decided`` table says, for each container, the last node that appended
about it, that append's last seq, and the last seq any other node appended about it before
(``others``): enough to tell whether a node other than the appending one wrote after what it
had seen. Such an append (a turn lost with its connection) is refused (``AppendConflict``)
without consuming a seq; the node applies what it missed and decides again. Appends without a
condition (recalls, injections) neither check nor touch the table.

The ``log`` table refuses UPDATE, DELETE and TRUNCATE (a trigger): the log is append-only here
as in LMDB, and erasure destroys keys, never records.

When the database cannot be reached an append fails with ``StorageFailed`` and the next one
reconnects. An append whose COMMIT was cut off may or may not have landed: its caller got an
error, never an acknowledgement, and a retry under the same idempotency key lands it once.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import msgspec
import psycopg

from ..errors import (
    CorruptRecord,
    DataDirLocked,
    IdempotencyConflict,
    InvalidInput,
    LogClosed,
    StorageFailed,
)
from .chain import IdempotencyEntry, chain
from .codec import RecordCodec, decode_framed, decode_value
from .committed import AppendRequest, GroupCommittedLog, answered_without_append
from .groupcommit import GroupCommitter
from .notify import HeadNotifier
from .pg_listening import Listener
from .pg_turns import DEFAULT_WAIT, Turns
from .port import Appended, Head, Hold, RawRecord
from .postgres_log_sql import (
    DEFAULT_POLL_INTERVAL,
    DEFAULT_SCHEMA,
    SCHEMA_NAME,
    Decided,
    Queries,
    as_bytes,
    as_int,
    create_tables,
    head_of,
    read_head,
)
from .record import StoredRecord

__all__ = ["DEFAULT_SCHEMA", "PostgresEventLog"]

T = TypeVar("T")


class PostgresEventLog(GroupCommittedLog):
    """The log in the tables of one PostgreSQL schema (``mnemolog`` unless told otherwise:
    a schema per store lets one database hold several)."""

    def __init__(
        self,
        url: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        codec: RecordCodec | None = None,
        max_batch: int = 512,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        connect_timeout: float = 10.0,
        readonly: bool = False,
        sole_writer: bool = False,
        turn_wait: float = DEFAULT_WAIT,
    ) -> None:
        """``readonly`` refuses every append (a replay or a verification beside a node);
        ``sole_writer`` holds the schema's advisory lock while open, so a second opening
        that asks for it is refused (``DataDirLocked``): ``migrate-log`` takes it, so two
        copies into one database never run at once (serving nodes share the log).
        ``turn_wait``: seconds a turn another node holds is waited for (``hold``)."""
        if not SCHEMA_NAME.fullmatch(schema):
            raise InvalidInput(f"a log schema is a lowercase SQL name, not {schema!r}")
        self._url = url
        self._schema = schema
        # Who this opening is in the ``decided`` table: its own appends in flight are never a
        # conflict for it. A restarted node is a new one (it decides from a caught-up state).
        self._node = uuid.uuid4().hex
        self._channel = f"{schema}_log"
        # What an operator sees in pg_stat_activity for each of this log's connections.
        self._application = f"mnemolog:{schema}"
        self._codec = codec or RecordCodec()
        self._poll_interval = poll_interval
        self._connect_timeout = connect_timeout
        self._q = Queries(schema)
        self._closed = False
        self._failure: LogClosed | None = (
            LogClosed("the log was opened read-only") if readonly else None
        )
        self._holder: psycopg.Connection[tuple[object, ...]] | None = None
        if sole_writer:
            self._holder = self._connect(autocommit=True)
            held = self._holder.execute(
                "SELECT pg_try_advisory_lock(hashtext(%s))", (f"mnemolog-writer:{schema}",)
            ).fetchone()
            if held is None or held[0] is not True:
                self._holder.close()
                raise DataDirLocked(
                    f"another migration is copying into the log in schema {schema!r} of that "
                    "database"
                )
        try:
            with self._connect() as conn:
                create_tables(conn, schema)
                self._head = read_head(conn, self._q)
        except BaseException:
            if self._holder is not None:
                self._holder.close()
            raise
        self._head_lock = threading.Lock()
        self._notifier = HeadNotifier(self._head.seq)
        self._reader: psycopg.Connection[tuple[object, ...]] | None = None
        self._reading = threading.Lock()
        self._writer_conn: psycopg.Connection[tuple[object, ...]] | None = None
        self._listener = Listener(
            lambda: self._connect(autocommit=True),
            self._channel,
            lambda conn: self._advance(read_head(conn, self._q)),
            poll_interval=poll_interval,
            name="mnemolog-log-listener",
        )
        self._writer: GroupCommitter[AppendRequest, Appended] = GroupCommitter(
            self._commit_resolving, name="mnemolog-log-writer", max_batch=max_batch
        )
        self._turns = Turns(
            lambda: self._connect(autocommit=True),
            self._q.read_head,
            schema,
            wait=turn_wait,
        )

    def _connect(self, *, autocommit: bool = False) -> psycopg.Connection[tuple[object, ...]]:
        try:
            return psycopg.connect(
                self._url,
                autocommit=autocommit,
                connect_timeout=int(self._connect_timeout),
                application_name=self._application,
            )
        except psycopg.Error as exc:
            raise StorageFailed(f"cannot reach the log's database: {exc}") from exc

    # --- writing -------------------------------------------------------------------------

    def _commit_batch(self, requests: Sequence[AppendRequest]) -> list[Appended | BaseException]:
        if self._failure is not None:
            raise self._failure
        if self._writer_conn is None or self._writer_conn.closed:
            self._writer_conn = self._connect()
        conn = self._writer_conn
        try:
            results, head = self._write(conn, requests)
        except psycopg.Error as exc:
            # The connection may be broken or mid-transaction: the next batch starts afresh.
            conn.close()
            self._writer_conn = None
            raise StorageFailed(f"the log's database refused the append: {exc}") from exc
        self._advance(head)
        return results

    def _write(
        self, conn: psycopg.Connection[tuple[object, ...]], requests: Sequence[AppendRequest]
    ) -> tuple[list[Appended | BaseException], Head]:
        results: list[Appended | BaseException] = []
        q = self._q
        with conn.transaction(), conn.cursor() as cur:
            # The one lock every node's append takes: seqs and hashes are assigned after it.
            cur.execute(q.lock_head)
            row = cur.fetchone()
            assert row is not None, "the head row is made with the tables"
            start = head = head_of(row)
            rows: list[tuple[int, bytes]] = []
            decided = Decided(cur, q, self._node, requests)
            for request in requests:
                early = answered_without_append(request, lambda r: self._idempotent_replay(cur, r))
                if early is None and request.condition is not None:
                    early = decided.refusal(request.condition)
                if early is not None:
                    results.append(early)
                    continue
                chained = chain(head, request.drafts, time.time_ns(), self._codec)
                if request.condition is not None:
                    decided.took(request.condition, chained.head.seq)
                rows.extend(
                    (record.seq, value)
                    for record, value in zip(chained.records, chained.values, strict=True)
                )
                if request.idempotency_key is not None:
                    entry = IdempotencyEntry(
                        request.fingerprint, chained.records[0].seq, len(chained.records)
                    )
                    # Written now: a later request of this batch with the same key finds it.
                    cur.execute(q.put_key, (request.idempotency_key, msgspec.msgpack.encode(entry)))
                head = chained.head
                results.append(Appended(chained.records))
            if head != start:
                with cur.copy(q.copy_log) as copy:
                    for seq, value in rows:
                        copy.write_row((seq, value))
                cur.execute(q.set_head, (head.seq, head.digest, head.ts))
                decided.save()
                cur.execute(q.notify, (self._channel, str(head.seq)))
        return results, head

    def import_records(
        self, records: Iterable[RawRecord], keys: Iterable[tuple[str, bytes]]
    ) -> Head:
        """Copy another log into this empty one, in one transaction: its records as stored
        (each checked and chained as it is read) and its idempotency keys, so a write retried
        across the move is still answered once. Refused unless this log is empty."""
        with self._connect() as conn:
            try:
                with conn.transaction(), conn.cursor() as cur:
                    cur.execute(self._q.lock_head)
                    row = cur.fetchone()
                    assert row is not None, "the head row is made with the tables"
                    head = head_of(row)
                    if head.seq != 0:
                        raise InvalidInput(f"the log in the database holds {head.seq} records")
                    with cur.copy(self._q.copy_log) as copy:
                        for raw in records:
                            framed = bytes.fromhex(raw.digest) + raw.data
                            stored = decode_value(raw.seq, framed, self._codec)
                            if raw.seq != head.seq + 1 or stored.record.prev != head.digest:
                                raise CorruptRecord(raw.seq, "does not follow the record before")
                            copy.write_row((raw.seq, framed))
                            head = Head(raw.seq, stored.digest, stored.record.ts)
                    for key, entry in keys:
                        cur.execute(self._q.put_key, (key, entry))
                    cur.execute(self._q.set_head, (head.seq, head.digest, head.ts))
                    cur.execute(self._q.notify, (self._channel, str(head.seq)))
            except psycopg.Error as exc:
                raise StorageFailed(f"the log's database refused the copy: {exc}") from exc
        self._advance(head)
        return head

    def _idempotent_replay(
        self, cur: psycopg.Cursor[tuple[object, ...]], request: AppendRequest
    ) -> Appended | None:
        if request.idempotency_key is None:
            return None
        cur.execute(self._q.get_key, (request.idempotency_key,))
        found = cur.fetchone()
        if found is None:
            return None
        entry = msgspec.msgpack.decode(as_bytes(found[0]), type=IdempotencyEntry)
        if entry.fingerprint != request.fingerprint:
            raise IdempotencyConflict(
                f"idempotency key {request.idempotency_key!r} was used with another payload"
            )
        cur.execute(self._q.read_range, (entry.first_seq, entry.first_seq + entry.count - 1))
        stored = {int(as_int(seq)): as_bytes(data) for seq, data in cur.fetchall()}
        records = []
        for seq in entry.seqs:
            value = stored.get(seq)
            if value is None:
                raise CorruptRecord(seq, "missing, although an idempotency key points at it")
            records.append(decode_value(seq, value, self._codec))
        return Appended(tuple(records), replayed=True)

    def _advance(self, head: Head) -> None:
        """Take ``head`` as the log's head if it is further on (this node's commit, or another
        node's seen by a notification or a poll)."""
        with self._head_lock:
            if head.seq <= self._head.seq:
                return
            self._head = head
        self._notifier.publish(head.seq)

    # --- deciding ------------------------------------------------------------------------

    def hold(self, key: str, *, within: bool = False) -> Hold:
        """This node's turn to decide about ``key`` (``pg_turns.py``)."""
        if self._failure is not None:
            raise self._failure
        return self._turns.hold(key, within=within)

    # --- reading -------------------------------------------------------------------------

    def current_head(self) -> Head:
        """The head row as the database holds it now (other nodes' appends included)."""
        self._advance(self._on_reader(lambda conn: read_head(conn, self._q)))
        return self._head

    def _on_reader(self, work: Callable[[psycopg.Connection[tuple[object, ...]]], T]) -> T:
        """``work`` on the reading connection, (re)connected first; a database error is a
        ``StorageFailed`` and the next read reconnects."""
        if self._closed:
            raise LogClosed("the log is closed")
        with self._reading:
            try:
                if self._reader is None or self._reader.closed:
                    self._reader = self._connect(autocommit=True)
                return work(self._reader)
            except psycopg.Error as exc:
                if self._reader is not None:
                    self._reader.close()
                self._reader = None
                raise StorageFailed(f"cannot read the log's database: {exc}") from exc

    def _read_chunk(self, seq: int, count: int) -> list[tuple[StoredRecord, bytes]]:
        rows = self._on_reader(
            lambda conn: conn.execute(self._q.read_range, (seq, seq + count - 1)).fetchall()
        )
        out: list[tuple[StoredRecord, bytes]] = []
        # Committed appends are contiguous from seq 1 (seqs come from the head row, under its
        # lock): a gap before the last row read is damage, never the end of the log.
        for expected, (found, data) in zip(range(seq, seq + count), rows, strict=False):
            if as_int(found) != expected:
                raise CorruptRecord(expected, "missing below the head")
            framed = as_bytes(data)
            out.append(decode_framed(expected, framed, self._codec))
        if out:
            last = out[-1][0]
            self._advance(Head(last.seq, last.digest, last.record.ts))
        return out

    # --- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._writer.close()
        self._closed = True
        self._failure = LogClosed("the log is closed")
        self._listener.close(timeout=self._poll_interval + self._connect_timeout + 5)
        self._turns.close()
        self._notifier.close()
        with self._reading:
            for conn in (self._reader, self._writer_conn, self._holder):
                if conn is not None:
                    conn.close()
