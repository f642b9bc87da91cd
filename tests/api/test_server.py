"""The server as users start it: ``mnemolog serve`` on loopback."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from mnemolog import __version__
from mnemolog.api.errors import install_error_handlers
from mnemolog.errors import DiskFull, IdempotencyConflict, MnemologError, StorageFailed
from mnemolog.eventlog import LmdbEventLog
from mnemolog.eventlog.datadir import log_dir

from ..factories import signal_draft
from ..servers import MNEMOLOG, app_server, free_port, mnemolog_server


def test_health_answers_on_loopback(tmp_path: Path) -> None:
    with mnemolog_server(tmp_path / "data") as (base_url, _):
        response = httpx.get(f"{base_url}/health")
    assert response.status_code == 200
    assert response.json() == {
        "ok": True,
        "service": "mnemolog",
        "version": __version__,
        "auth": "none",
        "log": {"head": 1, "writable": True, "error": None},  # the embedder pin
    }


def test_unknown_paths_get_the_json_error_shape(tmp_path: Path) -> None:
    with mnemolog_server(tmp_path / "data") as (base_url, _):
        response = httpx.get(f"{base_url}/no-such-thing")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_a_second_server_on_the_same_data_dir_exits_at_once(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with mnemolog_server(data_dir) as (base_url, first):
        second = subprocess.run(
            [MNEMOLOG, "serve", "--data-dir", str(data_dir), "--port", str(free_port())],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 3
        assert "is in use by another mnemolog process" in second.stderr
        assert f"pid {first.pid}" in second.stderr
        assert httpx.get(f"{base_url}/health").status_code == 200


def test_the_data_dir_is_private(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with mnemolog_server(data_dir):
        pass
    for path in [data_dir, *data_dir.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path} is readable by others ({oct(mode)})"


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (StorageFailed("fsync failed"), 503, "storage_failed"),
        (DiskFull("no space"), 507, "disk_full"),
        (IdempotencyConflict("key reused"), 409, "idempotency_conflict"),
    ],
)
def test_errors_map_to_one_json_shape(error: MnemologError, status: int, code: str) -> None:
    app = FastAPI()
    install_error_handlers(app)

    @app.post("/write")
    def write() -> None:
        raise error

    with app_server(app) as base_url:
        response = httpx.post(f"{base_url}/write")
    assert response.status_code == status
    assert response.json() == {"error": {"code": code, "message": str(error)}}


def test_a_truncated_log_stops_the_server_before_it_maps_the_file(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with LmdbEventLog(log_dir(data_dir)) as log:
        log.append([signal_draft(str(i), size=3000) for i in range(40)])
    data = log_dir(data_dir) / "data.mdb"
    os.truncate(data, data.stat().st_size // 2)
    result = subprocess.run(
        [MNEMOLOG, "serve", "--data-dir", str(data_dir), "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1  # a clean exit, not a signal such as SIGBUS
    assert "truncated" in result.stderr


def test_sigterm_saves_the_indexes_before_exit(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with mnemolog_server(data_dir) as (base_url, proc):
        written = httpx.post(
            f"{base_url}/memories",
            json={"containerTag": "t", "memories": [{"content": "Lee plays the oboe"}]},
        )
        assert written.status_code == 200
        proc.terminate()
        proc.wait(timeout=30)
    projections = data_dir / "projections"
    # The vector index and its sidecar exist only once saved; the log was applied up to the end.
    sidecar = projections / "vectors.hnsw.meta.json"
    assert sidecar.exists(), sorted(p.name for p in projections.iterdir())
    assert b'"last_seq":' in sidecar.read_bytes()
