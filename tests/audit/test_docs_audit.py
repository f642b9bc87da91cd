"""The shell sessions of docs/audit.md and docs/event-stream.md run, in order, against a real
server."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..servers import mnemolog_server

ROOT = Path(__file__).resolve().parents[2]
_SH_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def session(page: str) -> str:
    return "\n".join(_SH_BLOCK.findall((ROOT / "docs" / page).read_text(encoding="utf-8")))


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
@pytest.mark.parametrize("page", ["audit.md", "event-stream.md"])
def test_the_session_runs(tmp_path: Path, page: str) -> None:
    script = session(page)
    assert "BASE=http://127.0.0.1:8080" in script
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    # The pages run from a directory holding the server's data dir, `data`.
    with mnemolog_server(tmp_path / "data") as (base_url, _):
        done = subprocess.run(
            [
                "bash",
                "-euo",
                "pipefail",
                "-c",
                script.replace("http://127.0.0.1:8080", base_url).replace(
                    "tools/verify_log.py", str(ROOT / "tools" / "verify_log.py")
                ),
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "ok: " in done.stdout
