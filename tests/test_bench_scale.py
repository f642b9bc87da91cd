"""``bench/scale.py`` in a small run: every figure measured for mnemolog and the floor, the
section written into the page between its markers, replaced (not repeated) by the next run,
and kept by ``run_all.py`` when it rewrites the rest of the page. Time is not judged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from run_all import kept_sections  # noqa: E402


def scale(tmp_path: Path, page: Path, figures: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "scale.py"),
            *("--sizes", "300", "--rounds", "1", "--singles", "20", "--per-writer", "5"),
            *("--queries", "40", "--dir", str(tmp_path), "--out", str(page)),
            *("--json", str(figures)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "SuperLocalMemory V2 left out" in done.stderr


def test_a_small_scale_run_measures_and_writes_its_section(tmp_path: Path) -> None:
    page, figures = tmp_path / "benchmarks.md", tmp_path / "scale.json"
    page.write_text("# Benchmarks\n\nwritten by run_all.py\n")
    scale(tmp_path, page, figures)
    (found,) = json.loads(figures.read_text())["sizes"]["300"]
    ours, floor = found["mnemolog"], found["SQLite FTS5 (floor)"]
    assert ours["memories"] == floor["memories"] == 300 + 20 + 8 * 5
    assert ours["writers_errors"] == 0 and ours["hit_at_10"] >= 0.9
    assert ours["bytes_per_memory"] > 0 and ours["rss_mib"] > 0 and ours["boot_s"] > 0
    assert 0 < floor["hit_at_10"] <= 1
    text = page.read_text()
    assert text.startswith("# Benchmarks\n\nwritten by run_all.py\n")
    assert "| hit@10 |" in text and "| bytes/memory |" in text
    for name in ("scale_latency.png", "scale_bytes.png"):
        assert (tmp_path / "benchmarks" / name).read_bytes()[:4] == b"\x89PNG"
        assert f"](benchmarks/{name})" in text

    scale(tmp_path, page, figures)
    again = page.read_text()
    assert again.count("<!-- scale.py -->") == 1 and again.count("<!-- /scale.py -->") == 1
    kept = kept_sections(page)
    assert kept.strip().startswith("<!-- scale.py -->") and "| hit@10 |" in kept
