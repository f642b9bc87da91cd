"""The docs stay true: the CLI and settings pages are current, examples run."""

from __future__ import annotations

import importlib
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


# What a page may name in backticks: a path from the root of the tree, a module by its file
# name, or a module by its import name; and a link to another page of the tree.
_PATH = re.compile(r"`((?:src|bench|tests|tools|docs|\.ci)/[\w./<>-]*[\w/])`")
_MODULE_FILE = re.compile(r"`([\w/]+\.py)`")
# An import name has two parts at least: with one, it is a field of a body ("mnemolog.rerank").
_IMPORT_NAME = re.compile(r"`mnemolog((?:\.\w+){2,})`")
_LINK = re.compile(r"\]\(((?!https?:|#|mailto:)[^)#\s]+)")
# Named in backticks, yet no file of the tree: a name of an MCP method, and where the pages
# tell of places outside the tree (the evaluation data beside it).
_NOT_FILES = {"tools/list", "tools/call"}
_TREE_DIRS = ("src", "bench", "tests", "tools", "docs", ".ci")


def _pages() -> list[Path]:
    return [*sorted(DOCS.glob("*.md")), ROOT / "README.md", ROOT / "bench" / "README.md"]


def _tree_files() -> set[str]:
    """Every file and folder under the tree's top folders, by its path from the root."""
    found: set[str] = set()
    for top in _TREE_DIRS:
        for path in (ROOT / top).rglob("*"):
            if "__pycache__" not in path.parts:
                found.add(path.relative_to(ROOT).as_posix())
    return found


def _importable(dotted: str) -> bool:
    """``mnemolog`` + ``dotted`` is a module, or a name one defines."""
    name = "mnemolog" + dotted
    try:
        importlib.import_module(name)
    except ImportError:
        module, _, attribute = name.rpartition(".")
        try:
            return hasattr(importlib.import_module(module), attribute)
        except ImportError:
            return False
    return True


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_file_and_module_a_page_names_exists(page: Path) -> None:
    """A page that names a file, a module or another page names one that exists: a move or a
    rename that leaves a page behind fails here."""
    text = page.read_text(encoding="utf-8")
    files = _tree_files()
    names = {f.rsplit("/", 1)[-1] for f in files} | {
        f.split("/", 1)[1] for f in files if f.startswith("src/")
    }
    wrong = []
    for path in _PATH.findall(text):
        if path not in _NOT_FILES and "<" not in path and path.rstrip("/") not in files:
            wrong.append(path)
    for module in _MODULE_FILE.findall(text):
        if module.startswith(tuple(f"{top}/" for top in _TREE_DIRS)):
            continue  # a path from the root, checked above
        tail = module.rsplit("/", 1)[-1]
        known = module in files or module in names
        if not known and not any(f.endswith("/" + module) for f in files):
            wrong.append(module if tail in names else f"{module} (no such file anywhere)")
    wrong += [f"mnemolog{d}" for d in _IMPORT_NAME.findall(text) if not _importable(d)]
    for link in _LINK.findall(text):
        target = (page.parent / link).resolve()
        if target.is_relative_to(ROOT) and not target.exists():
            wrong.append(link)
    assert not wrong, f"{page.relative_to(ROOT)} names what does not exist: {wrong}"
