"""The data dir a terminal verb serves in its own process: on a Unix socket only its user can
connect to, in a directory only its user can enter, even when the data dir itself is open to
every local user."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import httpx

from mnemolog.reach import served_here
from mnemolog.settings_env import settings_from_env


def test_the_socket_is_the_owner_s_alone_in_a_private_directory(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o755)
    os.chmod(data_dir, 0o755)  # as `mkdir` leaves it under the usual umask
    settings = settings_from_env(os.environ, data_dir=data_dir, embedder="fast")
    with served_here(settings) as socket_path:
        mode = socket_path.stat().st_mode
        assert stat.S_ISSOCK(mode)
        assert stat.S_IMODE(mode) == 0o600
        directory = socket_path.parent.stat()
        assert stat.S_IMODE(directory.st_mode) == 0o700
        assert directory.st_uid == os.getuid()
        transport = httpx.HTTPTransport(uds=str(socket_path))
        with httpx.Client(transport=transport, base_url=f"http://localhost:{settings.port}") as c:
            assert c.get("/health").status_code == 200
    assert not socket_path.exists() and not socket_path.parent.exists()
