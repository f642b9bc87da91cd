"""The docs stay true: the CLI and settings pages are current, examples run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click
import msgspec
import pytest

from mnemolog.settings import Settings
from mnemolog.settings_env import ENV_VARS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def python_blocks(page: Path) -> list[str]:
    return _PYTHON_BLOCK.findall(page.read_text(encoding="utf-8"))


def test_cli_reference_is_current() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_cli_docs.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr + done.stdout


def test_cli_reference_has_a_section_per_command() -> None:
    from mnemolog.cli import main

    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert "python tools/gen_cli_docs.py" in text.splitlines()[2]
    headings = re.findall(r"^## (mnemolog.*)$", text, re.MULTILINE)
    root = click.Context(main)
    expected = ["mnemolog"]
    for name in main.list_commands(root):  # lazy commands too
        expected.append(f"mnemolog {name}")
        command = main.get_command(root, name)
        if isinstance(command, click.Group):  # and each subcommand of a group
            sub = click.Context(command, parent=root)
            expected += [f"mnemolog {name} {s}" for s in sorted(command.list_commands(sub))]
    assert headings == expected


def test_settings_reference_is_current() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_settings_docs.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr + done.stdout


def test_every_setting_is_documented() -> None:
    text = (DOCS / "settings.md").read_text(encoding="utf-8")
    rows = {
        cells[0].strip("` "): cells[1].strip("` ")
        for line in text.splitlines()
        if line.startswith("| `")
        for cells in [line.strip("|").split("|")]
    }
    assert rows == ENV_VARS
    assert set(rows) == {f.name for f in msgspec.structs.fields(Settings)}


def test_every_event_kind_is_documented() -> None:
    from mnemolog.eventlog import EVENT_TYPES
    from mnemolog.eventlog.events import event_tag

    text = (DOCS / "events.md").read_text(encoding="utf-8")
    for event_type in EVENT_TYPES:
        assert f"| `{event_tag(event_type)}` | `{event_type.__name__}` |" in text


def test_the_grade_scale_is_the_one_the_code_checks() -> None:
    from mnemolog.memory import GRADES

    assert GRADES == {0: "irrelevant", 1: "related", 2: "useful", 3: "answer"}
    mcp = (DOCS / "mcp.md").read_text(encoding="utf-8")
    for page in ("api.md", "events.md", "client.md"):
        text = (DOCS / page).read_text(encoding="utf-8")
        assert all(f"`{grade}` {name}" in text for grade, name in GRADES.items()), page
    assert all(f"| `{grade}` | {name} |" in mcp for grade, name in GRADES.items())


def test_events_page_has_the_worked_example() -> None:
    code = "\n".join(python_blocks(DOCS / "events.md"))
    assert "hashlib.sha256" in code and "assert" in code


@pytest.mark.parametrize(
    "page",
    sorted(p.name for p in DOCS.glob("*.md") if python_blocks(p)),
)
def test_python_examples_run(page: str) -> None:
    """Each page's ```python blocks run in order, in one namespace, and their asserts hold."""
    namespace: dict[str, object] = {"__name__": f"docs.{page}"}
    for number, block in enumerate(python_blocks(DOCS / page), start=1):
        exec(compile(block, f"docs/{page} (python block {number})", "exec"), namespace)
