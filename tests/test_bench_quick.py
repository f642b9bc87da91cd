"""The one benchmark command, in its quick form: it runs every benchmark to the end and writes
the page with its plots, trace fidelity is 100% and no secret is stored. Time is not judged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH_DATA = ROOT.parent / "shared" / "bench-data"

SECTIONS = (
    "# Benchmarks",
    "## Machine",
    "## Retrieval quality",
    "### Abstention",
    "### LoCoMo by category",
    "### Rerank pool size",
    "## Speed through the REST API",
    "## Proxy overhead",
    "## Audit probes",
    "## Goals",
)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_quick_benchmark_writes_the_page_and_its_plots(tmp_path: Path) -> None:
    if not (BENCH_DATA / "RECIPE.md").is_file() or not (BENCH_DATA / "secrets").is_dir():
        pytest.skip(f"the evaluation data is not at {BENCH_DATA} (it lives beside the repository)")
    page = tmp_path / "benchmarks.md"
    figures = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "run_all.py"),
            "--quick",
            "--out",
            str(page),
            "--json",
            str(figures),
            "--dir",
            str(tmp_path),
            # The quality tier runs the same scripts on another embedder; that embedder's own
            # figures are held by the calibration and poisoning tests.
            "--tiers",
            "fast",
            # Smaller still than --quick: every script runs to the end all the same.
            "--sizes",
            "200",
            "--questions-per-conversation",
            "10",
            "--pools",
            "10",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    text = page.read_text(encoding="utf-8")
    for heading in SECTIONS:
        assert f"\n{heading}\n" in f"\n{text}", heading
    report = json.loads(figures.read_text(encoding="utf-8"))
    assert set(report["plots"]) == {"latency", "categories", "pool"}
    for path in map(Path, report["plots"].values()):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert path.parent == tmp_path / "benchmarks"
        assert f"](benchmarks/{path.name})" in text
    # Every script ran to the end.
    for key, run in report["retrieval"]["runs"].items():
        assert "error" not in run, key
        dataset = key.split("/")[1]
        lines = {line["line"] for line in run["datasets"][dataset]["baselines"]["lines"]}
        assert {"turn/bm25", "turn/bm25-stemmed", "turn/vector", "turn/no-recency", "turn"} <= lines
        assert run["datasets"][dataset]["abstention"]["auroc"]
    assert all("error" not in r for r in report["speed"]["repeats_raw"])
    assert all("error" not in r for r in report["proxy"]["repeats_raw"])
    audit = report["audit"]
    assert "error" not in audit
    for run in audit["fidelity"]:
        assert run["turns"]["turns"] > 0
        assert run["turns"]["exact"] == run["turns"]["turns"]
        assert run["replay"]["checked"] > 0 and run["replay"]["differs"] == 0
        assert run["replay"]["exact"] == run["replay"]["checked"] - run["replay"]["unverifiable"]
    assert audit["capture"]["values_scanned_for_goal"] > 300
    assert audit["capture"]["stored_secret_values"] == 0
