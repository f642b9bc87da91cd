"""Options every command shares, their help read off the settings they set, so an
environment variable's name or a default is written once, in ``settings.py``."""

from __future__ import annotations

from pathlib import Path

import click

from .settings_env import SETTINGS

__all__ = ["data_dir_option", "setting_help"]

_DECLARED = {setting.name: setting for setting in SETTINGS}


def setting_help(name: str, what: str) -> str:
    """``what [env MNEMOLOG_X; default D].`` for the setting ``name``."""
    setting = _DECLARED[name]
    default: object = setting.default
    if isinstance(default, Path) and not default.is_absolute():
        default = f"./{default}"
    shown = (setting.meta.extra or {}).get("default")
    if isinstance(shown, str):  # as docs/settings.md shows it, where it is not the value
        default = shown.format(default).replace("`", "")
    return f"{what} [env {setting.env}; default {default}]."


data_dir_option = click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help=setting_help("data_dir", "Data directory"),
)
