"""Where the write and search paths report how long each of their stages took: a port that a
shell may fill (the server's ``/metrics``), and that costs nothing when none does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

__all__ = ["NO_TIMINGS", "StageTimings"]


class StageTimings(Protocol):
    def observe(self, operation: str, stages_ms: Mapping[str, float]) -> None:
        """One ``operation`` (``write``, ``search``) took ``stages_ms`` in each stage."""


class _Unheard:
    def observe(self, operation: str, stages_ms: Mapping[str, float]) -> None:
        return None


NO_TIMINGS: StageTimings = _Unheard()
