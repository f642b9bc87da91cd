"""Verify a stored log end to end: checksums, seq continuity, the hash chain and the head.

Imports nothing of the server, so ``mnemolog verify-log`` stays small and can run beside a
live server (LMDB readers do not block the writer).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import lmdb
import msgspec

from ..errors import CorruptLog, CorruptRecord
from .codec import RecordCodec, decode_value
from .lmdb_env import open_env
from .port import EventLog, Head
from .record import GENESIS, key_seq

_HEAD_KEY = b"head"


class VerifyReport(msgspec.Struct, frozen=True, kw_only=True):
    ok: bool
    records: int
    head_seq: int
    head_digest: str
    first_bad_seq: int | None = None
    reason: str | None = None


def verify_log(path: Path, codec: RecordCodec | None = None) -> VerifyReport:
    """Check every record of the log environment at ``path``; never raises on corruption.

    LMDB trusts the page numbers and lengths it reads, and has no page checksums: a damaged
    page can send it past the end of the file, and touching that memory kills the process
    (SIGBUS). So the walk runs in a child process, and a child killed that way is reported as
    a damaged log. With a ``codec`` of the caller's own it runs here instead (a child could
    not be given one).
    """
    if codec is not None:
        return _verify_here(path, codec)
    done = subprocess.run(
        [sys.executable, "-m", "mnemolog.eventlog.verify", str(path)],
        capture_output=True,
        check=False,
    )
    if done.returncode < 0:
        killer = signal.Signals(-done.returncode).name
        return VerifyReport(
            ok=False,
            records=0,
            head_seq=0,
            head_digest=GENESIS,
            reason=f"reading the log killed its reader ({killer}): a damaged page",
        )
    try:
        return msgspec.json.decode(done.stdout, type=VerifyReport)
    except msgspec.DecodeError:
        reason = done.stderr.decode("utf-8", "replace").strip()[-500:] or "no report"
        return VerifyReport(
            ok=False, records=0, head_seq=0, head_digest=GENESIS, reason=f"verify failed: {reason}"
        )


def _verify_here(path: Path, codec: RecordCodec | None = None) -> VerifyReport:
    if not (path / "data.mdb").exists():
        return VerifyReport(
            ok=False, records=0, head_seq=0, head_digest=GENESIS, reason=f"no log at {path}"
        )
    try:
        env = open_env(path, map_size=0, max_dbs=4, readonly=True)
    except (CorruptLog, lmdb.Error) as exc:
        return VerifyReport(ok=False, records=0, head_seq=0, head_digest=GENESIS, reason=str(exc))
    try:
        return _walk(env, codec or RecordCodec())
    finally:
        env.close()


def _walk(env: lmdb.Environment, codec: RecordCodec) -> VerifyReport:
    seq, prev, ts = 0, GENESIS, 0

    def bad(at: int, reason: str) -> VerifyReport:
        return VerifyReport(
            ok=False, records=seq, head_seq=seq, head_digest=prev, first_bad_seq=at, reason=reason
        )

    try:
        try:
            log_db = env.open_db(b"log", create=False)
            meta_db = env.open_db(b"meta", create=False)
        except lmdb.NotFoundError:
            # Only a log that never committed a record lacks its databases.
            if env.stat()["entries"]:
                return bad(1, "the log's databases are missing")
            return _good(0, GENESIS)
        with env.begin() as txn:
            for key, value in txn.cursor(db=log_db):
                expected = seq + 1
                if len(key) != 8:
                    return bad(expected, "malformed key")
                if key_seq(key) != expected:
                    return bad(expected, f"missing (next key is {key_seq(key)})")
                # A cursor walks leaf pages without reading branch keys; a lookup by key is
                # how readers find records, so check that it finds this very one.
                if txn.get(key, db=log_db) != value:
                    return bad(expected, "not found by key (a damaged index page)")
                stored = decode_value(expected, bytes(value), codec)
                if stored.record.prev != prev:
                    return bad(expected, "does not chain to the previous record")
                if stored.record.ts < ts:
                    return bad(expected, "time goes backwards")
                seq, prev, ts = expected, stored.digest, stored.record.ts
            raw_head = txn.get(_HEAD_KEY, db=meta_db)
    except CorruptRecord as exc:
        return bad(exc.seq, exc.reason)
    except (lmdb.Error, msgspec.DecodeError) as exc:
        return bad(seq + 1, f"LMDB cannot read the log: {exc}")
    if raw_head is None:
        return bad(1, "the head record is missing") if seq else _good(0, GENESIS)
    try:
        head = msgspec.msgpack.decode(raw_head, type=Head)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return bad(seq + 1, "the head record is damaged")
    if head.seq > seq:
        return bad(seq + 1, f"missing: the head says the log ends at seq {head.seq}")
    if head.seq < seq:
        return bad(head.seq + 1, f"beyond the head (seq {head.seq})")
    if head.digest != prev:
        return bad(seq, "the head's hash does not match the last record")
    return _good(seq, prev)


def verify_opened(log: EventLog) -> VerifyReport:
    """Check every record of an opened log (the one in PostgreSQL) up to the head it holds
    when the walk starts: checksums, seq continuity, the hash chain, time order and the head.
    Records appended during the walk are left for the next one."""
    seq, prev, ts = 0, GENESIS, 0

    def bad(at: int, reason: str) -> VerifyReport:
        return VerifyReport(
            ok=False, records=seq, head_seq=seq, head_digest=prev, first_bad_seq=at, reason=reason
        )

    head = log.current_head()
    try:
        for stored in log.read(1, limit=head.seq):
            expected = seq + 1
            if stored.seq != expected:
                return bad(expected, f"missing (next record is {stored.seq})")
            if stored.record.prev != prev:
                return bad(expected, "does not chain to the previous record")
            if stored.record.ts < ts:
                return bad(expected, "time goes backwards")
            seq, prev, ts = expected, stored.digest, stored.record.ts
    except CorruptRecord as exc:
        return bad(exc.seq, exc.reason)
    if seq < head.seq:
        return bad(seq + 1, f"missing: the head says the log ends at seq {head.seq}")
    if head.digest != prev:
        return bad(seq, "the head's hash does not match the last record")
    return _good(seq, prev)


def _good(seq: int, digest: str) -> VerifyReport:
    return VerifyReport(ok=True, records=seq, head_seq=seq, head_digest=digest)


if __name__ == "__main__":  # the child of ``verify_log``: one report, as JSON, on stdout
    sys.stdout.buffer.write(msgspec.json.encode(_verify_here(Path(sys.argv[1]))))
