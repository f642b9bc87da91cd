"""``verify_log`` names the first bad seq for every kind of damage."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import lmdb
import pytest

from mnemolog.eventlog import LmdbEventLog, verify_log
from mnemolog.eventlog.record import frame, seq_key, unframe

from ..factories import signal_draft

COUNT = 20


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, list[str]]:
    with LmdbEventLog(tmp_path) as log:
        for i in range(COUNT):
            log.append([signal_draft(f"note-{i}", size=300)])
        digests = [r.digest for r in log.read()]
    return tmp_path, digests


def tamper(path: Path, change: Callable[[lmdb.Transaction, object], None]) -> None:
    env = lmdb.open(str(path), max_dbs=4)
    with env.begin(write=True) as txn:
        change(txn, env.open_db(b"log", txn=txn))
    env.close()


def test_an_intact_log_verifies(built: tuple[Path, list[str]]) -> None:
    path, digests = built
    report = verify_log(path)
    assert report.ok
    assert (report.records, report.head_seq, report.head_digest) == (COUNT, COUNT, digests[-1])
    assert report.first_bad_seq is None


def test_a_flipped_byte_is_found(built: tuple[Path, list[str]]) -> None:
    path, _ = built

    def flip(txn: lmdb.Transaction, db: object) -> None:
        value = bytearray(txn.get(seq_key(7), db=db))
        value[100] ^= 0x04
        txn.put(seq_key(7), bytes(value), db=db)

    tamper(path, flip)
    report = verify_log(path)
    assert not report.ok
    assert report.first_bad_seq == 7
    assert report.reason == "checksum mismatch"


def test_a_record_rewritten_with_a_fresh_checksum_breaks_the_chain(
    built: tuple[Path, list[str]],
) -> None:
    path, _ = built

    def forge(txn: lmdb.Transaction, db: object) -> None:
        _, record = unframe(5, bytes(txn.get(seq_key(5), db=db)))
        assert b"note-4" in record
        txn.put(seq_key(5), frame(record.replace(b"note-4", b"note-X")), db=db)

    tamper(path, forge)
    report = verify_log(path)
    assert (report.ok, report.first_bad_seq) == (False, 6)
    assert report.reason == "does not chain to the previous record"


def test_a_dropped_record_is_found(built: tuple[Path, list[str]]) -> None:
    path, _ = built
    tamper(path, lambda txn, db: txn.delete(seq_key(9), db=db))
    report = verify_log(path)
    assert (report.ok, report.first_bad_seq) == (False, 9)
    assert report.reason is not None and report.reason.startswith("missing")


def test_a_dropped_tail_record_is_found(built: tuple[Path, list[str]]) -> None:
    path, _ = built
    tamper(path, lambda txn, db: txn.delete(seq_key(COUNT), db=db))
    report = verify_log(path)
    assert (report.ok, report.first_bad_seq) == (False, COUNT)


def test_reordered_records_are_found(built: tuple[Path, list[str]]) -> None:
    path, _ = built

    def swap(txn: lmdb.Transaction, db: object) -> None:
        a, b = txn.get(seq_key(3), db=db), txn.get(seq_key(4), db=db)
        txn.put(seq_key(3), b, db=db)
        txn.put(seq_key(4), a, db=db)

    tamper(path, swap)
    report = verify_log(path)
    assert (report.ok, report.first_bad_seq) == (False, 3)
    assert report.reason == "record claims seq 4"


def test_a_truncated_file_is_found_before_it_is_mapped(built: tuple[Path, list[str]]) -> None:
    path, _ = built
    data = path / "data.mdb"
    os.truncate(data, data.stat().st_size - 4096)
    report = verify_log(path)
    assert not report.ok
    assert report.reason is not None and "truncated" in report.reason


def test_a_missing_log_is_reported(tmp_path: Path) -> None:
    report = verify_log(tmp_path / "nothing")
    assert not report.ok
    assert report.reason is not None and report.reason.startswith("no log")


LIVE_WRITER = """
import sys
from pathlib import Path
from mnemolog.eventlog import Actor, Draft, LmdbEventLog
from mnemolog.eventlog.events import AgentSignal

actor = Actor(agent_id="w", protocol="cli")
with LmdbEventLog(Path(sys.argv[1])) as log:
    print("ready", flush=True)
    for i in range(100_000):
        log.append([Draft(actor, AgentSignal(agent_id="w", signal="neutral", label=str(i)))])
"""


def test_verify_beside_a_live_writer_sees_a_consistent_log(tmp_path: Path) -> None:
    writer = subprocess.Popen(
        [sys.executable, "-c", LIVE_WRITER, str(tmp_path)], stdout=subprocess.PIPE
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == b"ready\n"
        reports = [verify_log(tmp_path) for _ in range(30)]
    finally:
        writer.kill()
        writer.wait()
        if writer.stdout is not None:
            writer.stdout.close()
    assert all(r.ok for r in reports), [r for r in reports if not r.ok][:1]
    assert reports[-1].records > reports[0].records  # it was really writing meanwhile
