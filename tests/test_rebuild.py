"""`mnemolog rebuild`: projections are derived data; a rebuild from the log serves the same."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import httpx

from .servers import MNEMOLOG, mnemolog_server

ENV = {"MNEMOLOG_EMBEDDER": "quality"}


def snapshot(base_url: str, memory_ids: list[str]) -> list[object]:
    chains = [httpx.get(f"{base_url}/memories/{m}").json() for m in memory_ids]
    listed = httpx.get(f"{base_url}/memories", params={"containerTag": "u1"}).json()
    found = httpx.post(
        f"{base_url}/search", json={"q": "Hana's city", "containerTag": "u1", "recency": False}
    ).json()["results"]
    return [chains, listed, [(r["versionId"], r["similarity"]) for r in found]]


def test_rebuild_reproduces_what_the_server_serves(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with mnemolog_server(data_dir, ENV) as (base_url, _):
        written = httpx.post(
            f"{base_url}/memories",
            json={
                "containerTag": "u1",
                "memories": [
                    {"content": "Hana lives in Osaka"},
                    {"content": "Hana works as a nurse"},
                ],
            },
        ).json()["memories"]
        ids = [m["id"] for m in written]
        httpx.post(
            f"{base_url}/memories",
            json={"containerTag": "u1", "memories": [{"content": "Hana lives in Kyoto"}]},
        )
        httpx.post(f"{base_url}/memories/{ids[1]}/forget", json={"reason": "outdated"})
        before = snapshot(base_url, ids)
        busy = subprocess.run(
            [MNEMOLOG, "rebuild", "--data-dir", str(data_dir)], capture_output=True, text=True
        )
        assert busy.returncode == 3 and "in use" in busy.stderr

    for name in ("memories.sqlite3", "traces.sqlite3"):
        (data_dir / "projections" / name).unlink()
    done = subprocess.run(
        [MNEMOLOG, "rebuild", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        env={**os.environ, **ENV},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("rebuilt: ")
    # Not a terminal: the progress is a line per tenth, on standard error, ending complete.
    shown = [x for x in done.stderr.splitlines() if x.startswith("rebuild  [")]
    assert shown and re.search(r"100%  (\d+)/\1 records", shown[-1]), done.stderr

    with mnemolog_server(data_dir, ENV) as (base_url, _):
        after = snapshot(base_url, ids)
    assert after == before
