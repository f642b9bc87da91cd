"""``bench/log_backends.py``: both logs timed in one run, and a second PostgreSQL log's lag."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"


def test_a_short_run_times_both_logs_and_the_follower(postgres_url: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH / "log_backends.py"),
            "--postgres",
            postgres_url,
            "--seconds",
            "0.2",
            "--rounds",
            "1",
            "--lag-appends",
            "10",
            "--dir",
            str(tmp_path),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=BENCH,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    summary = report["summary"]
    assert set(summary) == {"1w x1", "8w x1", "1w x100", "follower_lag_ms"}
    for name in ("1w x1", "8w x1", "1w x100"):
        for backend in ("lmdb", "postgres"):
            assert summary[name][backend]["events_per_s"] > 0
    lag = summary["follower_lag_ms"]
    assert 0 < lag["p50"] <= lag["p99"] < 10_000
    assert list(tmp_path.iterdir()) == []  # the LMDB logs were removed
