"""``read_raw``: the stored bytes of records, checked as ``read`` checks them."""

from __future__ import annotations

import hashlib
from pathlib import Path

import lmdb
import pytest

from mnemolog.errors import CorruptRecord
from mnemolog.eventlog import LmdbEventLog, RecordCodec
from mnemolog.eventlog.record import seq_key

from ..factories import signal_draft


def test_read_raw_gives_the_bytes_that_were_hashed(tmp_path: Path) -> None:
    with LmdbEventLog(tmp_path / "log") as log:
        log.append([signal_draft(f"s{i}") for i in range(300)])  # past one read chunk
        raws = list(log.read_raw(2, limit=299))
        stored = list(log.read(2, limit=299))
    assert [r.seq for r in raws] == list(range(2, 301))
    codec = RecordCodec()
    for raw, record in zip(raws, stored, strict=True):
        assert hashlib.sha256(raw.data).hexdigest() == raw.digest == record.digest
        assert codec.decode(raw.seq, raw.data) == record.record


def test_read_raw_checks_the_checksum(tmp_path: Path) -> None:
    with LmdbEventLog(tmp_path / "log") as log:
        log.append([signal_draft("a"), signal_draft("b"), signal_draft("c")])
    env = lmdb.open(str(tmp_path / "log"), max_dbs=4)
    with env.begin(write=True) as txn:
        db = env.open_db(b"log", txn=txn)
        value = bytearray(txn.get(seq_key(2), db=db))
        value[-3] ^= 1
        txn.put(seq_key(2), bytes(value), db=db)
    env.close()
    # Opening checks only the last record; the read finds the damage below it.
    with (
        LmdbEventLog(tmp_path / "log") as log,
        pytest.raises(CorruptRecord, match="record 2: checksum mismatch"),
    ):
        list(log.read_raw())
