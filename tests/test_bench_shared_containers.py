"""``bench/shared_containers.py``: a short run of two nodes deciding about the same containers
and one node on LMDB, each reported with its writes and none refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"

pytestmark = pytest.mark.slow


def test_a_short_run_reports_every_configuration_it_was_asked_for(postgres_url: str) -> None:
    only = ["--only", "lmdb-1-disjoint", "postgres-2-shared"]
    args = ["--postgres", postgres_url, "--seconds", "1", "--rounds", "1", "--writers", "2"]
    command = [sys.executable, "shared_containers.py", *args, *only, "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=BENCH)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)["summary"]
    assert set(summary) == {"lmdb-1-disjoint", "postgres-2-shared"}
    for figures in summary.values():
        assert figures["writes_per_s"] > 0 and figures["refused"] == 0
