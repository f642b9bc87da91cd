"""Choosing a tier: explicit choices win; auto goes by available memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemolog.embedding import (
    QUALITY_MIN_AVAILABLE,
    available_memory,
    choose_tier,
)
from mnemolog.errors import InvalidInput

GIB = 1 << 30


def test_auto_is_the_measured_default_the_fast_tier() -> None:
    assert QUALITY_MIN_AVAILABLE == GIB
    for room in (64 * GIB, GIB, 300 << 20, None):
        assert choose_tier("auto", room) == "fast"


def test_explicit_choices_ignore_memory() -> None:
    assert choose_tier("quality", 1) == "quality"
    assert choose_tier("fast", 64 * GIB) == "fast"
    with pytest.raises(InvalidInput, match="unknown embedder tier 'best'"):
        choose_tier("best", GIB)  # type: ignore[arg-type]


def _meminfo(tmp_path: Path, kib: int) -> Path:
    path = tmp_path / "meminfo"
    path.write_text(f"MemTotal:       32000000 kB\nMemFree: 1 kB\nMemAvailable:   {kib} kB\n")
    return path


def test_available_memory_reads_meminfo_and_cgroup_limits(tmp_path: Path) -> None:
    meminfo = _meminfo(tmp_path, 4_000_000)
    assert available_memory(meminfo, cgroups=[]) == 4_000_000 * 1024
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "memory.max").write_text(f"{GIB}\n")
    (v2 / "memory.current").write_text(f"{GIB // 4}\n")
    assert available_memory(meminfo, cgroups=[tmp_path / "absent", v2]) == GIB - GIB // 4
    (v2 / "memory.max").write_text("max\n")
    assert available_memory(meminfo, cgroups=[v2]) == 4_000_000 * 1024
    v1 = tmp_path / "v1"
    v1.mkdir()
    (v1 / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "no limit"
    (v1 / "memory.usage_in_bytes").write_text("468234240\n")
    assert available_memory(meminfo, cgroups=[v1]) == 4_000_000 * 1024
    assert available_memory(tmp_path / "absent", cgroups=[]) is None


def test_available_memory_on_this_machine() -> None:
    found = available_memory()
    assert found is None or found > 0
