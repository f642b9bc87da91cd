"""What only the LMDB log does: reopen, map growth, head checks, durable flags."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import lmdb
import msgspec
import pytest

from mnemolog.errors import CorruptLog, StorageError
from mnemolog.eventlog import LmdbEventLog, verify_log
from mnemolog.eventlog import lmdb_env as lmdb_env_module
from mnemolog.eventlog.lmdb_env import open_env
from mnemolog.eventlog.port import Head

from ..factories import signal_draft


def test_reopen_continues_the_chain(tmp_path: Path) -> None:
    with LmdbEventLog(tmp_path) as log:
        log.append([signal_draft("a"), signal_draft("b")])
        head = log.head()
    with LmdbEventLog(tmp_path) as log:
        assert log.head() == head
        log.append([signal_draft("c")])
        records = list(log.read())
    assert [r.seq for r in records] == [1, 2, 3]
    assert records[2].record.prev == head.digest
    assert records[2].record.ts >= head.ts
    assert verify_log(tmp_path).ok


def test_map_grows_when_full(tmp_path: Path) -> None:
    with LmdbEventLog(tmp_path, map_size=64 * 1024) as log:
        for i in range(40):
            log.append([signal_draft(f"{i}-{j}", size=4000) for j in range(10)])
        assert log.head().seq == 400
        assert log.failure is None
        assert [r.seq for r in log.read()] == list(range(1, 401))
    assert (tmp_path / "data.mdb").stat().st_size > 64 * 1024
    assert verify_log(tmp_path).ok


def test_a_head_that_disagrees_with_the_last_record_refuses_to_open(tmp_path: Path) -> None:
    with LmdbEventLog(tmp_path) as log:
        log.append([signal_draft("a"), signal_draft("b")])
    env = lmdb.open(str(tmp_path), max_dbs=4)
    with env.begin(write=True) as txn:
        txn.delete((2).to_bytes(8, "big"), db=env.open_db(b"log", txn=txn))
    env.close()
    with pytest.raises(CorruptLog, match="does not match its last record"):
        LmdbEventLog(tmp_path)


def test_head_is_stored_with_the_records(tmp_path: Path) -> None:
    with LmdbEventLog(tmp_path) as log:
        log.append([signal_draft("a")])
        head = log.head()
    env = lmdb.open(str(tmp_path), max_dbs=4, readonly=True)
    with env.begin() as txn:
        raw = txn.get(b"head", db=env.open_db(b"meta", txn=txn, create=False))
    env.close()
    assert msgspec.msgpack.decode(raw, type=Head) == head


def test_durable_flags_are_on(tmp_path: Path) -> None:
    env = open_env(tmp_path, map_size=1 << 20, max_dbs=1)
    flags = env.flags()
    env.close()
    assert (flags["sync"], flags["metasync"], flags["writemap"], flags["map_async"]) == (
        True,
        True,
        False,
        False,
    )


def test_opening_without_durable_flags_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = lmdb.open

    def careless_open(path: str, **kwargs: object) -> lmdb.Environment:
        return real_open(path, **{**kwargs, "sync": False})

    monkeypatch.setattr(lmdb_env_module.lmdb, "open", careless_open)
    with pytest.raises(StorageError, match="durable flags"):
        LmdbEventLog(tmp_path)


def test_reads_do_not_hold_a_transaction_between_chunks(tmp_path: Path) -> None:
    with LmdbEventLog(tmp_path, map_size=64 * 1024) as log:
        log.append([signal_draft(str(i)) for i in range(600)])
        reader = log.read()
        first = next(reader)
        # A paused reader must not block map growth (which needs no open transaction).
        for i in range(30):
            log.append([signal_draft(f"grow-{i}", size=4000) for _ in range(5)])
        rest = list(reader)
    assert first.seq == 1
    assert [r.seq for r in rest] == list(range(2, 751))


def test_concurrent_appends_share_commits(tmp_path: Path) -> None:
    async def burst(log: LmdbEventLog) -> list[int]:
        results = await asyncio.gather(
            *(log.append_async([signal_draft(f"n{i}")]) for i in range(200))
        )
        return [r.seqs[0] for r in results]

    with LmdbEventLog(tmp_path) as log:
        seqs = asyncio.run(burst(log))
        stats = log.writer_stats
    assert sorted(seqs) == list(range(1, 201))
    assert stats.requests == 200
    # 200 requests queued at once cannot each have needed their own durable commit.
    assert stats.batches < 200
    assert stats.largest > 1


def test_reader_slots_of_dead_processes_are_cleared(tmp_path: Path) -> None:
    with LmdbEventLog(tmp_path, reader_check_every=0.05) as log:
        log.append([signal_draft("a")])
        reader = subprocess.Popen(
            [sys.executable, "-c", STALE_READER, str(tmp_path)], stdout=subprocess.PIPE
        )
        assert reader.stdout is not None and reader.stdout.readline() == b"reading\n"
        assert f"{reader.pid} " in readers_table(log)
        reader.kill()
        reader.wait()
        reader.stdout.close()
        deadline = time.monotonic() + 30
        while f"{reader.pid} " in readers_table(log) and time.monotonic() < deadline:
            log.append([signal_draft("tick")])
            time.sleep(0.05)
        assert f"{reader.pid} " not in readers_table(log)


STALE_READER = """
import sys, time, lmdb
env = lmdb.open(sys.argv[1], max_dbs=4, readonly=True)
txn = env.begin()
print("reading", flush=True)
time.sleep(60)
"""


def readers_table(log: LmdbEventLog) -> str:
    # LMDB's own reader table (pid, thread, txnid per slot); no public view of it exists.
    return str(log._env.readers())


def test_a_refused_open_can_be_retried(tmp_path: Path) -> None:
    with LmdbEventLog(tmp_path) as log:
        log.append([signal_draft("a")])
    env = lmdb.open(str(tmp_path), max_dbs=4)
    with env.begin(write=True) as txn:
        txn.delete(b"head", db=env.open_db(b"meta", txn=txn))
    env.close()
    for _ in range(2):  # the failed open must not leave the environment open
        with pytest.raises(CorruptLog):
            LmdbEventLog(tmp_path)
