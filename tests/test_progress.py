"""The progress shown by long commands."""

from __future__ import annotations

import io

from mnemolog.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_a_terminal_a_line_per_tenth_and_the_last_figures_once() -> None:
    out = io.StringIO()
    shown = Progress("import", "lines", stream=out)
    for done in range(0, 1001, 7):
        shown(done, 1000)
    shown.finish()
    lines = out.getvalue().splitlines()
    percents = [int(line.split("]")[1].split("%")[0]) for line in lines]
    # One line as each tenth is reached (0 to 90%), then the last call's figures (994/1000).
    assert [p // 10 for p in percents] == [*range(10), 9]
    assert "994/1,000 lines" in lines[-1]


def test_on_a_terminal_one_line_redrawn_in_place() -> None:
    out = Terminal()
    shown = Progress("rebuild", "records", stream=out)
    for done in range(1, 101):
        shown(done, 100)
    shown.finish()
    text = out.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")
    assert text.startswith("\rrebuild  [")
    assert "100/100 records" in text.rsplit("\r", 1)[1]


def test_a_total_of_zero_is_complete_not_a_division_by_zero() -> None:
    out = io.StringIO()
    shown = Progress("rebuild", "records", stream=out)
    shown(0, 0)
    shown.finish()
    assert "100%  0/0 records" in out.getvalue()
