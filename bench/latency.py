"""Latency figures shared by the benchmarks (imported by the scripts beside it)."""

from __future__ import annotations

import math


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted, non-empty list."""
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def latency_summary(samples: list[float]) -> dict[str, float | None]:
    """p50, p95, p99 and max in milliseconds of samples in seconds (None when there are none)."""
    if not samples:
        return {"p50_ms": None, "p95_ms": None, "p99_ms": None, "max_ms": None}
    ordered = sorted(samples)
    return {
        "p50_ms": percentile(ordered, 50) * 1e3,
        "p95_ms": percentile(ordered, 95) * 1e3,
        "p99_ms": percentile(ordered, 99) * 1e3,
        "max_ms": ordered[-1] * 1e3,
    }
