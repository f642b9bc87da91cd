"""How far a long command is, on standard error: a bar redrawn in place on a terminal, a line
per tenth otherwise (a log file or a pipe keeps every line it is given).

    rebuild  [##########..........]  50%  61,440/122,880 records  4.1 s, about 4 s left

Handed to the work as a ``(done, total)`` callable; it draws at most ten times a second, so a
caller may call it per item.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]

_WIDTH = 20
_REDRAW_SECONDS = 0.1


class Progress:
    def __init__(self, what: str, unit: str, *, stream: TextIO | None = None) -> None:
        self.what = what
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty()
        self.started = time.monotonic()
        self._drawn_at = 0.0
        self._tenth = -1
        self._last: tuple[int, int] | None = None
        self._shown: tuple[int, int] | None = None  # what a printed line said last

    def __call__(self, done: int, total: int) -> None:
        self._last = (done, total)
        now = time.monotonic()
        if self.live:
            if now - self._drawn_at >= _REDRAW_SECONDS or done >= total:
                self._drawn_at = now
                self._shown = self._last
                self.stream.write("\r" + self._line(done, total, now) + "\033[K")
                self.stream.flush()
            return
        tenth = done * 10 // total if total > 0 else 10
        if tenth != self._tenth:
            self._tenth = tenth
            self._shown = self._last
            self.stream.write(self._line(done, total, now) + "\n")
            self.stream.flush()

    def finish(self) -> None:
        """Show the last figures if they were not, and end a terminal's line."""
        if self._last is None or self._last == self._shown:
            if self.live and self._last is not None:
                self.stream.write("\n")
            return
        done, total = self._last
        line = self._line(done, total, time.monotonic())
        self.stream.write(("\r" + line + "\033[K\n") if self.live else line + "\n")
        self.stream.flush()

    def _line(self, done: int, total: int, now: float) -> str:
        took = now - self.started
        share = min(done / total, 1.0) if total > 0 else 1.0
        filled = round(share * _WIDTH)
        bar = "#" * filled + "." * (_WIDTH - filled)
        left = ""
        if 0 < done < total and took > 1:
            left = f", about {took * (total - done) / done:.0f} s left"
        return (
            f"{self.what}  [{bar}] {share:4.0%}  {done:,}/{total:,} {self.unit}  {took:.1f} s{left}"
        )
