"""The command line, through click's runner and as a real process."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import lmdb
import pytest
from click.testing import CliRunner

from mnemolog.cli import main
from mnemolog.eventlog import LmdbEventLog
from mnemolog.eventlog.datadir import log_dir
from mnemolog.eventlog.record import seq_key
from mnemolog.settings import default_model_cache

from .factories import signal_draft
from .servers import MNEMOLOG, free_port, wait_healthy


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    with LmdbEventLog(log_dir(tmp_path / "data")) as log:
        log.append([signal_draft("a"), signal_draft("b"), signal_draft("c")])
    return tmp_path / "data"


def head_digest(data_dir: Path) -> str:
    with LmdbEventLog(log_dir(data_dir)) as log:
        return log.head().digest


def test_verify_log_on_an_intact_log(data_dir: Path) -> None:
    digest = head_digest(data_dir)
    result = CliRunner().invoke(main, ["verify-log", "--data-dir", str(data_dir)])
    assert result.exit_code == 0
    assert result.output == f"ok: 3 records, head 3 {digest}\n"


def test_verify_log_reads_the_data_dir_from_the_environment(data_dir: Path) -> None:
    result = CliRunner().invoke(
        main, ["verify-log", "--json"], env={"MNEMOLOG_DATA_DIR": str(data_dir)}
    )
    assert result.exit_code == 0
    report = json.loads(result.output)
    assert (report["ok"], report["records"], report["first_bad_seq"]) == (True, 3, None)


def test_verify_log_names_the_first_bad_seq(data_dir: Path) -> None:
    env = lmdb.open(str(log_dir(data_dir)), max_dbs=4)
    with env.begin(write=True) as txn:
        db = env.open_db(b"log", txn=txn)
        value = bytearray(txn.get(seq_key(2), db=db))
        value[-5] ^= 1
        txn.put(seq_key(2), bytes(value), db=db)
    env.close()
    result = CliRunner().invoke(main, ["verify-log", "--data-dir", str(data_dir)])
    assert result.exit_code == 1
    assert result.stderr == "corrupt: first bad seq 2: checksum mismatch\n"
    as_json = CliRunner().invoke(main, ["verify-log", "--json", "--data-dir", str(data_dir)])
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["first_bad_seq"] == 2


def test_verify_log_without_a_log_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["verify-log", "--data-dir", str(tmp_path / "empty")])
    assert result.exit_code == 2
    assert result.stderr.startswith("corrupt: no log at ")


def test_a_bad_setting_is_a_usage_error_naming_the_variable(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["serve", "--data-dir", str(tmp_path)], env={"MNEMOLOG_PORT": "eighty"}
    )
    assert result.exit_code == 2
    assert "MNEMOLOG_PORT" in result.stderr


def test_verify_log_does_not_import_the_server(data_dir: Path) -> None:
    probe = (
        "import sys\n"
        "from mnemolog.cli import main\n"
        "try:\n"
        f"    main(['verify-log', '--data-dir', {str(data_dir)!r}])\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('fastapi', 'uvicorn', 'starlette') or m == 'mnemolog.api')\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok: 3 records")


def test_serve_says_where_everything_is(tmp_path: Path) -> None:
    """The start-up block names the data dir's absolute path, the embedder, the auth state and
    every door's URL on the port the server took, before it takes requests."""
    port = free_port()
    relative = Path(os.path.relpath(tmp_path / "store", Path.cwd()))
    server = subprocess.Popen(
        [MNEMOLOG, "serve", "--data-dir", str(relative), "--port", str(port)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "MNEMOLOG_EMBEDDER": "fast"},
    )
    try:
        assert server.stderr is not None
        said = [server.stderr.readline() for _ in range(8)]
        wait_healthy(f"http://127.0.0.1:{port}", server)
    finally:
        server.terminate()
        server.communicate(timeout=30)  # reads the rest of stderr, and closes it
    text = "".join(said)
    assert said[0].startswith("mnemolog ")
    assert f"data dir    {(tmp_path / 'store').resolve()}\n" in text
    assert "embedder    fast tier: " in text
    assert "auth        none: open to callers on this machine" in text
    for door in ("/ui", "/v1", "/mcp", "/docs"):
        assert f"http://127.0.0.1:{port}{door}" in text


def test_serve_on_a_port_in_use_says_how_to_pick_another(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = subprocess.run(
            [MNEMOLOG, "serve", "--data-dir", str(tmp_path / "data"), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "--port or MNEMOLOG_PORT" in done.stderr
    assert not (tmp_path / "data").exists()  # refused before the store was made


def test_serve_defaults_to_the_users_data_home_and_points_at_an_old_store(tmp_path: Path) -> None:
    """With no data dir chosen, the store is the user's (``~/.local/share/mnemolog``) whatever
    directory ``serve`` runs in; a store left in ``./data`` is named, not silently ignored."""
    home, work = tmp_path / "home", tmp_path / "work"
    (work / "data" / "log").mkdir(parents=True)
    home.mkdir()
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MNEMOLOG_")},
        "HOME": str(home),
        "MNEMOLOG_EMBEDDER": "fast",
        "MNEMOLOG_MODEL_CACHE_DIR": str(default_model_cache()),
    }
    env.pop("XDG_DATA_HOME", None)
    server = subprocess.Popen(
        [MNEMOLOG, "serve", "--port", str(port)],
        cwd=work,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert server.stderr is not None
        said = [server.stderr.readline() for _ in range(9)]
        wait_healthy(f"http://127.0.0.1:{port}", server)
    finally:
        server.terminate()
        server.communicate(timeout=30)
    text = "".join(said)
    store = home / ".local" / "share" / "mnemolog"
    assert f"data dir    {store}\n" in text
    assert (store / "log").is_dir()
    assert f"note        {work / 'data'} holds a mnemolog store" in text
    assert f"--data-dir {work / 'data'}" in text


def test_serve_logs_each_request_on_one_readable_line(tmp_path: Path) -> None:
    """On by default: method, path, status, duration, size, client and agent, one line each;
    a health check that succeeds is left out, one that fails would not be."""
    port = free_port()
    log = tmp_path / "server.log"
    env = {k: v for k, v in os.environ.items() if k != "MNEMOLOG_ACCESS_LOG"}
    with log.open("wb") as out:
        server = subprocess.Popen(
            [MNEMOLOG, "serve", "--data-dir", str(tmp_path / "data"), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**env, "MNEMOLOG_EMBEDDER": "fast"},
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(base, server)
            with httpx.Client(base_url=base) as client:
                client.post(
                    "/memories",
                    json={"containerTag": "c", "memories": [{"content": "Ada likes tea"}]},
                )
                client.get("/memories", params={"containerTag": "c"})
                client.get("/memories/mem_unknown")
                client.get("/health")
        finally:
            server.terminate()
            server.wait(timeout=30)
    lines = log.read_text().splitlines()
    pattern = r"\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d {} {} {} [\d.]+ ms \d+ B 127\.0\.0\.1 agent=local"
    for method, target, status in (
        ("POST", "/memories", 200),
        ("GET", "/memories\\?containerTag", 200),  # a query by its names, never its values
        ("GET", "/memories/mem_unknown", 404),
    ):
        assert any(re.fullmatch(pattern.format(method, target, status), x) for x in lines), lines
    assert not any(" /health " in x for x in lines)
    assert "Ada likes tea" not in log.read_text()
