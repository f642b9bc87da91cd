from __future__ import annotations

import struct
from pathlib import Path

import pytest

from mnemolog.errors import CorruptLog
from mnemolog.eventlog import LmdbEventLog
from mnemolog.eventlog.preflight import check_data_file

from ..factories import signal_draft


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    with LmdbEventLog(tmp_path) as log:
        for i in range(5):
            log.append([signal_draft(str(i), size=5000)])
    return tmp_path / "data.mdb"


def patch(path: Path, offset: int, data: bytes) -> None:
    with path.open("r+b") as f:
        f.seek(offset)
        f.write(data)


def test_a_healthy_file_and_a_missing_one_pass(data_file: Path, tmp_path: Path) -> None:
    check_data_file(data_file)
    check_data_file(tmp_path / "absent.mdb")


@pytest.mark.parametrize("keep", [0, 100, 4096, 8191])
def test_a_file_shorter_than_its_meta_pages_is_refused(data_file: Path, keep: int) -> None:
    with data_file.open("r+b") as f:
        f.truncate(keep)
    with pytest.raises(CorruptLog, match="truncated"):
        check_data_file(data_file)


def test_a_file_shorter_than_its_last_page_is_refused(data_file: Path) -> None:
    with data_file.open("r+b") as f:
        f.truncate(data_file.stat().st_size - 1)
    with pytest.raises(CorruptLog, match="truncated"):
        check_data_file(data_file)


def test_a_damaged_magic_is_refused(data_file: Path) -> None:
    patch(data_file, 4096 + 16, b"\0\0\0\0")
    with pytest.raises(CorruptLog, match="meta page 1 is damaged"):
        check_data_file(data_file)


def test_a_damaged_transaction_id_is_refused(data_file: Path) -> None:
    # A flipped txnid would make LMDB pick the older snapshot and silently lose a commit.
    txnid = struct.unpack_from("<Q", data_file.read_bytes(), 144)[0]
    patch(data_file, 144, struct.pack("<Q", txnid ^ 0x10))
    with pytest.raises(CorruptLog, match="inconsistent transaction ids"):
        check_data_file(data_file)


def test_a_root_past_the_last_page_is_refused(data_file: Path) -> None:
    data = data_file.read_bytes()
    newest = max((0, 1), key=lambda i: struct.unpack_from("<Q", data, i * 4096 + 144)[0])
    patch(data_file, newest * 4096 + 128, struct.pack("<Q", 10**6))
    with pytest.raises(CorruptLog, match="points past the last page"):
        check_data_file(data_file)


def test_the_log_refuses_to_open_a_truncated_file(data_file: Path) -> None:
    with data_file.open("r+b") as f:
        f.truncate(data_file.stat().st_size // 2)
    with pytest.raises(CorruptLog):
        LmdbEventLog(data_file.parent)
