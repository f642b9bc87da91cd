"""The worked session of docs/replay.md runs as written, against a real server."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..servers import mnemolog_server

PAGE = Path(__file__).resolve().parents[2] / "docs" / "replay.md"
_SH_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.MULTILINE | re.DOTALL)


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_replay_session_runs(tmp_path: Path) -> None:
    script = "\n".join(_SH_BLOCK.findall(PAGE.read_text(encoding="utf-8")))
    assert "mnemolog replay" in script and "--check-traces" in script
    data_dir = tmp_path / "data"
    with mnemolog_server(data_dir) as (base_url, _):
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
            env={
                **os.environ,
                "BASE": base_url,
                "DATA": str(data_dir),
                "MNEMOLOG_EMBEDDER": "quality",
                "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
            },
        )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
