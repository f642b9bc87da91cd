"""Every package under src/ is listed in pyproject.toml: a non-editable install ships only the
listed ones, so one left out works in the checkout and is missing once installed."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_listed_for_installation() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    src = ROOT / "src"
    found = {
        ".".join(("mnemolog", *init.parent.relative_to(src).parts))
        for init in src.rglob("__init__.py")
    }
    assert found <= listed
    # The rest are data directories, listed so that setuptools does not warn on every
    # install; they hold no code.
    for package in listed - found:
        folder = src / Path(*package.split(".")[1:])
        assert folder.is_dir() and not list(folder.glob("*.py")), package
