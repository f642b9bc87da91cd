"""``mnemolog export-log`` and ``tools/verify_log.py`` as commands: exit codes and output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mnemolog.cli import main
from mnemolog.errors import InvalidInput
from mnemolog.eventlog import LmdbEventLog
from mnemolog.eventlog.datadir import log_dir
from mnemolog.settings_env import settings_from_env

from ..factories import signal_draft

VERIFIER = Path(__file__).resolve().parents[2] / "tools" / "verify_log.py"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    with LmdbEventLog(log_dir(tmp_path / "data")) as log:
        log.append([signal_draft(f"s{i}") for i in range(5)])
    return tmp_path / "data"


def verify(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-I", "-S", str(VERIFIER), *args],
        input=stdin,
        capture_output=True,
        timeout=60,
    )


def test_export_to_a_file_and_verify_it(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "log.jsonl"
    result = CliRunner().invoke(main, ["export-log", "--data-dir", str(data_dir), "-o", str(out)])
    assert result.exit_code == 0 and result.output == ""
    with LmdbEventLog(log_dir(data_dir)) as log:
        head = log.head()
    done = verify(str(out))
    assert done.returncode == 0
    assert done.stdout.decode() == f"ok: 5 records, seq 1..5, last {head.digest}\n"
    assert verify(str(out), "--expect-last", head.digest).returncode == 0
    wrong = verify(str(out), "--expect-last", "f" * 64)
    assert wrong.returncode == 1
    assert wrong.stderr.decode().startswith(f"bad: line 6: the last hash is {head.digest}, not ")


def test_a_range_on_stdout_verifies_from_stdin(data_dir: Path) -> None:
    result = CliRunner().invoke(
        main, ["export-log", "--data-dir", str(data_dir), "--from", "2", "--to", "4"]
    )
    assert result.exit_code == 0
    done = verify("-", "--json", stdin=result.stdout_bytes)
    report = json.loads(done.stdout)
    assert done.returncode == 0
    assert (report["ok"], report["records"], report["from"], report["to"]) == (True, 3, 2, 4)
    first = json.loads(result.stdout_bytes.splitlines()[1])
    assert report["prev"] == first["prev"]
    other = verify("-", "--expect-prev", "0" * 64, stdin=result.stdout_bytes)
    assert other.returncode == 1 and b"line 1: continues from" in other.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "0"], "from must be at least 1"),
        (["--from", "4", "--to", "3"], "from (4) is after to (3)"),
        (["--to", "6"], "to (6) is past the head of the log (5)"),
    ],
)
def test_a_bad_range_is_a_usage_error(data_dir: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["export-log", "--data-dir", str(data_dir), *args])
    assert result.exit_code == 2
    assert message in result.stderr


def test_export_without_a_log_exits_2_and_creates_nothing(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["export-log", "--data-dir", str(tmp_path / "none")])
    assert result.exit_code == 2
    assert result.stderr.startswith("mnemolog: no log at ")
    assert not (tmp_path / "none").exists()


def test_an_empty_log_exports_a_header_that_verifies(tmp_path: Path) -> None:
    LmdbEventLog(log_dir(tmp_path / "data")).close()
    result = CliRunner().invoke(main, ["export-log", "--data-dir", str(tmp_path / "data")])
    assert result.exit_code == 0
    assert len(result.stdout_bytes.splitlines()) == 1
    done = verify("-", stdin=result.stdout_bytes)
    assert done.returncode == 0 and done.stdout == b"ok: 0 records, last " + b"0" * 64 + b"\n"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "line 1: the export is empty (no header)"),
        (b"not json\n", "line 1: not a line of JSON"),
        (b'{"format":"other"}\n', "line 1: not a mnemolog-log-export header"),
        (b'{"a":1,"a":2}\n', "line 1: not a line of JSON: key 'a' appears twice"),
        (b"\xff\n", "line 1: not a line of JSON"),
    ],
)
def test_the_verifier_names_what_is_wrong(data: bytes, reason: str) -> None:
    done = verify("-", stdin=data)
    assert done.returncode == 1
    assert done.stderr.decode().startswith(f"bad: {reason}")


def test_the_verifier_exits_2_on_usage_and_unreadable_files(tmp_path: Path) -> None:
    assert verify().returncode == 2
    missing = verify(str(tmp_path / "missing.jsonl"))
    assert missing.returncode == 2 and b"cannot read" in missing.stderr


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"MNEMOLOG_EVENTS_HEARTBEAT_SECONDS": "0"}, "events_heartbeat_seconds"),
        ({"MNEMOLOG_STREAM_CHUNK_RECORDS": "0"}, "stream_chunk_records"),
        ({"MNEMOLOG_STREAM_CHUNK_RECORDS": "many"}, "MNEMOLOG_STREAM_CHUNK_RECORDS"),
    ],
)
def test_bad_stream_settings_are_named(env: dict[str, str], needle: str) -> None:
    with pytest.raises(InvalidInput, match=needle):
        settings_from_env(env)
