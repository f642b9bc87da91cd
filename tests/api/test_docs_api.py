"""The curl session of docs/api.md runs, in order, against a real server."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ..servers import mnemolog_server

PAGE = Path(__file__).resolve().parents[2] / "docs" / "api.md"
_SH_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.MULTILINE | re.DOTALL)


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_curl_session_runs(tmp_path: Path) -> None:
    script = "\n".join(_SH_BLOCK.findall(PAGE.read_text(encoding="utf-8")))
    assert "BASE=http://127.0.0.1:8080" in script
    with mnemolog_server(tmp_path / "data") as (base_url, _):
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script.replace("http://127.0.0.1:8080", base_url)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert '"status":"superseded"' in done.stdout
    assert '"hardDeleted":true' in done.stdout
