"""The embedded ``EventLog``: LMDB, one writer thread, group commit, fail-stop on I/O errors."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import lmdb
import msgspec

from ..errors import (
    CorruptLog,
    CorruptRecord,
    DiskFull,
    IdempotencyConflict,
    LogClosed,
    StorageError,
)
from .chain import IdempotencyEntry, chain
from .codec import RecordCodec, decode_framed, decode_value
from .committed import AppendRequest, GroupCommittedLog, answered_without_append
from .groupcommit import GroupCommitter
from .lmdb_env import open_env, storage_failure
from .notify import HeadNotifier
from .port import EMPTY_HEAD, Appended, Head
from .record import StoredRecord, seq_key
from .rw_gate import ReadWriteGate

_HEAD_KEY = b"head"
_MAX_GROWTHS = 16


class LmdbEventLog(GroupCommittedLog):
    """The log in one LMDB environment: sub-databases ``log``, ``meta`` and ``idempotency``.

    Keys of ``log`` are u64 big-endian seqs; values are framed records (``record.py``).
    ``meta`` holds the head (seq, hash, time), written in the same transaction as the records,
    so a dropped tail record is detected. After any failed commit other than a full map the
    log refuses every further write until it is reopened: LMDB itself would carry on after a
    failed fsync as if the data were on disk.
    """

    def __init__(
        self,
        path: Path,
        *,
        codec: RecordCodec | None = None,
        map_size: int = 64 << 20,
        max_batch: int = 512,
        reader_check_every: float = 30.0,
        readonly: bool = False,
    ) -> None:
        """``readonly`` opens an existing log beside its writer (another process, say) for
        reading what it held at the time of opening; every append is refused."""
        self._codec = codec or RecordCodec()
        self._env = open_env(path, map_size=map_size, max_dbs=4, readonly=readonly)
        try:
            if readonly:  # handles opened in a read transaction die with it: none here
                self._log_db = self._env.open_db(b"log", create=False)
                self._meta_db = self._env.open_db(b"meta", create=False)
                self._idem_db = self._env.open_db(b"idempotency", create=False)
            else:
                with self._env.begin(write=True) as txn:  # all three exist, or none does
                    self._log_db = self._env.open_db(b"log", txn=txn)
                    self._meta_db = self._env.open_db(b"meta", txn=txn)
                    self._idem_db = self._env.open_db(b"idempotency", txn=txn)
            self._head = self._load_head()
        except lmdb.Error as exc:
            self._env.close()
            raise storage_failure(exc) from exc
        except BaseException:
            self._env.close()  # LMDB refuses a second open of a path still open
            raise
        self._gate = ReadWriteGate()
        self._failure: StorageError | None = (
            LogClosed("the log was opened read-only") if readonly else None
        )
        self._notifier = HeadNotifier(self._head.seq)
        self._writer: GroupCommitter[AppendRequest, Appended] = GroupCommitter(
            self._commit_resolving,
            name="mnemolog-log-writer",
            max_batch=max_batch,
            every=reader_check_every,
            periodic=self._clear_stale_readers,
        )

    # --- writing: ``GroupCommittedLog`` (``append``, ``append_async``, ``submit``) --------

    def _commit_batch(self, requests: Sequence[AppendRequest]) -> list[Appended | BaseException]:
        if self._failure is not None:
            raise self._failure
        for _ in range(_MAX_GROWTHS):
            try:
                with self._gate.shared():
                    return self._write(requests)
            except lmdb.MapFullError:
                self._grow_map()
            except lmdb.Error as exc:
                self._failure = storage_failure(exc)
                raise self._failure from exc
        self._failure = DiskFull("the LMDB map could not grow far enough")
        raise self._failure

    def _write(self, requests: Sequence[AppendRequest]) -> list[Appended | BaseException]:
        head = self._head
        results: list[Appended | BaseException] = []
        txn = self._env.begin(write=True)
        try:
            for request in requests:
                early = answered_without_append(request, lambda r: self._idempotent_replay(txn, r))
                if early is not None:
                    results.append(early)
                    continue
                chained = chain(head, request.drafts, time.time_ns(), self._codec)
                for record, value in zip(chained.records, chained.values, strict=True):
                    if not txn.put(seq_key(record.seq), value, db=self._log_db, append=True):
                        raise CorruptLog(f"seq {record.seq} already exists")
                if request.idempotency_key is not None:
                    entry = IdempotencyEntry(
                        request.fingerprint, chained.records[0].seq, len(chained.records)
                    )
                    txn.put(
                        request.idempotency_key.encode(),
                        msgspec.msgpack.encode(entry),
                        db=self._idem_db,
                    )
                head = chained.head
                results.append(Appended(chained.records))
            if head != self._head:
                txn.put(_HEAD_KEY, msgspec.msgpack.encode(head), db=self._meta_db)
            txn.commit()
        except BaseException:
            txn.abort()
            raise
        if head != self._head:
            self._head = head
            self._notifier.publish(head.seq)
        return results

    def _idempotent_replay(self, txn: lmdb.Transaction, request: AppendRequest) -> Appended | None:
        if request.idempotency_key is None:
            return None
        raw = txn.get(request.idempotency_key.encode(), db=self._idem_db)
        if raw is None:
            return None
        entry = msgspec.msgpack.decode(raw, type=IdempotencyEntry)
        if entry.fingerprint != request.fingerprint:
            raise IdempotencyConflict(
                f"idempotency key {request.idempotency_key!r} was used with another payload"
            )
        records = []
        for seq in entry.seqs:
            value = txn.get(seq_key(seq), db=self._log_db)
            if value is None:
                raise CorruptRecord(seq, "missing, although an idempotency key points at it")
            records.append(decode_value(seq, bytes(value), self._codec))
        return Appended(tuple(records), replayed=True)

    def idempotency_keys(self) -> Iterator[tuple[str, bytes]]:
        """Every idempotency key and its stored entry (``IdempotencyEntry``, msgpack): what a
        copy of the log to another backend takes along."""
        with self._gate.shared(), self._env.begin(db=self._idem_db) as txn:
            found = [(bytes(k).decode(), bytes(v)) for k, v in txn.cursor()]
        yield from found

    def _grow_map(self) -> None:
        with self._gate.exclusive():
            size = int(self._env.info()["map_size"])
            self._env.set_mapsize(size * 2)

    # --- reading: ``GroupCommittedLog`` (``read``, ``read_raw``), ``FollowedHead`` -------

    def _read_chunk(self, seq: int, count: int) -> list[tuple[StoredRecord, bytes]]:
        out: list[tuple[StoredRecord, bytes]] = []
        # The head moves only after its commit, so read before the snapshot it is within it.
        head = self._head.seq
        with self._gate.shared(), self._env.begin(db=self._log_db) as txn:
            for expected in range(seq, min(seq + count, head + 1)):
                value = txn.get(seq_key(expected))
                if value is None:
                    # Below the head every seq exists: a miss is damage (e.g. a branch page's
                    # separator key), never the end of the log.
                    raise CorruptRecord(expected, "missing below the head")
                framed = bytes(value)
                out.append(decode_framed(expected, framed, self._codec))
        return out

    # --- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        self._writer.close()
        self._notifier.close()
        with self._gate.exclusive():
            self._env.close()

    def _clear_stale_readers(self) -> None:
        """Free reader slots left by dead processes, so they cannot pin old pages."""
        self._env.reader_check()

    def _load_head(self) -> Head:
        with self._env.begin() as txn:
            raw = txn.get(_HEAD_KEY, db=self._meta_db)
            cursor = txn.cursor(db=self._log_db)
            last = (
                decode_value(
                    int.from_bytes(cursor.key(), "big"), bytes(cursor.value()), self._codec
                )
                if cursor.last()
                else None
            )
        head = EMPTY_HEAD if raw is None else msgspec.msgpack.decode(raw, type=Head)
        found = EMPTY_HEAD if last is None else Head(last.seq, last.digest, last.record.ts)
        if head != found:
            raise CorruptLog(
                f"the log's head (seq {head.seq}) does not match its last record "
                f"(seq {found.seq}); run `mnemolog verify-log`"
            )
        return head
