from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from mnemolog.errors import InvalidInput
from mnemolog.settings import Settings
from mnemolog.settings_env import ENV_VARS, SETTINGS, Setting, settings_from_env


def test_defaults_are_the_documented_embedded_ones() -> None:
    settings = settings_from_env({})
    assert settings == Settings()
    home = Path.home() / ".local" / "share" / "mnemolog"
    assert (settings.data_dir, settings.host, settings.port) == (home, "127.0.0.1", 8080)


def test_the_default_data_dir_is_the_users_not_the_working_directorys(tmp_path: Path) -> None:
    assert settings_from_env({"HOME": str(tmp_path)}).data_dir == (
        tmp_path / ".local" / "share" / "mnemolog"
    )
    xdg = tmp_path / "xdg"
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(xdg)}
    assert settings_from_env(env).data_dir == xdg / "mnemolog"
    # A relative XDG_DATA_HOME is invalid by the XDG spec and ignored.
    env["XDG_DATA_HOME"] = "rel"
    assert settings_from_env(env).data_dir == tmp_path / ".local" / "share" / "mnemolog"


def test_environment_then_explicit_overrides() -> None:
    env = {"MNEMOLOG_DATA_DIR": "/srv/m", "MNEMOLOG_PORT": "9000", "MNEMOLOG_HOST": "::1"}
    settings = settings_from_env(env, port=9100, host=None)
    assert (settings.data_dir, settings.host, settings.port) == (Path("/srv/m"), "::1", 9100)


def test_empty_variables_mean_unset() -> None:
    assert settings_from_env({"MNEMOLOG_PORT": ""}).port == 8080


def test_every_field_has_a_variable() -> None:
    assert set(ENV_VARS) == set(Settings.__struct_fields__)
    assert [s.name for s in SETTINGS] == list(Settings.__struct_fields__)
    assert all(var == "MNEMOLOG_" + field.upper() for field, var in ENV_VARS.items())


def test_every_setting_is_described_and_keeps_its_default() -> None:
    for setting in SETTINGS:
        assert setting.description.endswith("."), setting.name
        assert getattr(Settings(), setting.name) == setting.default


def test_the_documented_model_cache_default_is_the_property() -> None:
    (model_cache_dir,) = (s for s in SETTINGS if s.name == "model_cache_dir")
    shown = (model_cache_dir.meta.extra or {})["default"].strip("`")
    assert Path(shown).expanduser() == Settings().model_cache


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"MNEMOLOG_PORT": "http"}, "MNEMOLOG_PORT"),
        ({"MNEMOLOG_PORT": "70000"}, r"invalid setting port \(MNEMOLOG_PORT\): .*<= 65535"),
        ({"MNEMOLOG_LOG_MAP_SIZE": "10"}, "log_map_size"),
        ({"MNEMOLOG_READER_CHECK_SECONDS": "0"}, "reader_check_seconds"),
        ({"MNEMOLOG_EMBEDDER": "slow"}, "MNEMOLOG_EMBEDDER"),
    ],
)
def test_bad_values_are_named(env: dict[str, str], needle: str) -> None:
    with pytest.raises(InvalidInput, match=needle):
        settings_from_env(env)


def test_overrides_are_checked_too() -> None:
    with pytest.raises(InvalidInput, match=re.escape("invalid setting port (MNEMOLOG_PORT)")):
        settings_from_env({}, port=0)


def _step(setting: Setting, value: object, up: bool) -> object:
    """The next representable value of the setting's type above (or below) ``value``."""
    assert isinstance(value, int | float)
    if setting.type is int:
        return int(value) + (1 if up else -1)
    return math.nextafter(value, math.inf if up else -math.inf)


# Bound kind -> (a value just outside it, a value just inside it), from the setting and bound.
_Case = Callable[[Setting, object], tuple[object, object]]
_JUST: dict[str, _Case] = {
    "ge": lambda s, b: (_step(s, b, up=False), b),
    "gt": lambda s, b: (b, _step(s, b, up=True)),
    "le": lambda s, b: (_step(s, b, up=True), b),
    "lt": lambda s, b: (b, _step(s, b, up=False)),
    "min_length": lambda s, b: ("x" * (int(str(b)) - 1), "x" * int(str(b))),
    "max_length": lambda s, b: ("é" * (int(str(b)) + 1), "é" * int(str(b))),  # characters
}
# Pattern -> (values it refuses, values it accepts).
_PATTERNS: dict[str, tuple[list[str], list[str]]] = {
    "^https?://": (
        ["file:///etc/passwd", "ftp://h/v1", "HTTP://h", " http://h", "x-http://h", "http:/h"],
        ["http://127.0.0.1:8081/v1", "https://h"],
    ),
    "^postgres(ql)?://": (
        ["/var/lib/mnemolog", "mysql://h/db", "POSTGRESQL://h", " postgresql://h", "sqlite://x"],
        ["postgresql://mnemolog@db.internal/mnemolog", "postgres://127.0.0.1:5433/m"],
    ),
}
_BOUNDS = [(s, kind) for s in SETTINGS for kind in s.bounds if kind != "pattern"]


def test_every_declared_kind_of_bound_is_tested() -> None:
    kinds = {kind for s in SETTINGS for kind in s.bounds}
    assert kinds - {"pattern"} <= set(_JUST)
    assert {s.bounds["pattern"] for s in SETTINGS if "pattern" in s.bounds} <= set(_PATTERNS)


def _named(setting: Setting) -> str:
    return re.escape(f"invalid setting {setting.name} ({setting.env}): ")


@pytest.mark.parametrize(
    ("setting", "kind"), _BOUNDS, ids=[f"{s.name}-{kind}" for s, kind in _BOUNDS]
)
def test_each_bound_is_enforced_from_the_environment(setting: Setting, kind: str) -> None:
    outside, inside = _JUST[kind](setting, setting.bounds[kind])
    with pytest.raises(InvalidInput, match=_named(setting)):
        if outside == "":  # an empty variable means unset: only an option can pass ""
            settings_from_env({}, **{setting.name: outside})
        else:
            settings_from_env({setting.env: str(outside)})
    accepted = getattr(settings_from_env({setting.env: str(inside)}), setting.name)
    assert accepted == inside


@pytest.mark.parametrize(
    "setting", [s for s in SETTINGS if "pattern" in s.bounds], ids=lambda s: s.name
)
def test_each_pattern_is_enforced_from_the_environment(setting: Setting) -> None:
    refused, accepted = _PATTERNS[str(setting.bounds["pattern"])]
    for value in refused:
        with pytest.raises(InvalidInput, match=_named(setting)):
            settings_from_env({setting.env: value})
    for value in accepted:
        assert getattr(settings_from_env({setting.env: value}), setting.name) == value


@pytest.mark.parametrize(
    "setting",
    [s for s in SETTINGS if s.type is float and {"ge", "gt", "le", "lt"} & set(s.bounds)],
    ids=lambda s: s.name,
)
def test_a_bounded_number_refuses_nan(setting: Setting) -> None:
    with pytest.raises(InvalidInput, match=_named(setting)):
        settings_from_env({setting.env: "nan"})
