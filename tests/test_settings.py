from __future__ import annotations

from pathlib import Path

import pytest

from mnemolog.errors import InvalidInput
from mnemolog.settings import ENV_VARS, Settings, settings_from_env


def test_defaults_are_the_documented_embedded_ones() -> None:
    settings = settings_from_env({})
    assert settings == Settings()
    assert (settings.data_dir, settings.host, settings.port) == (Path("data"), "127.0.0.1", 8080)


def test_environment_then_explicit_overrides() -> None:
    env = {"MNEMOLOG_DATA_DIR": "/srv/m", "MNEMOLOG_PORT": "9000", "MNEMOLOG_HOST": "::1"}
    settings = settings_from_env(env, port=9100, host=None)
    assert (settings.data_dir, settings.host, settings.port) == (Path("/srv/m"), "::1", 9100)


def test_empty_variables_mean_unset() -> None:
    assert settings_from_env({"MNEMOLOG_PORT": ""}).port == 8080


def test_every_field_has_a_variable() -> None:
    assert set(ENV_VARS) == set(Settings.__struct_fields__)
    assert all(var.startswith("MNEMOLOG_") for var in ENV_VARS.values())


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"MNEMOLOG_PORT": "http"}, "MNEMOLOG_PORT"),
        ({"MNEMOLOG_PORT": "70000"}, "port 70000 is out of range"),
        ({"MNEMOLOG_LOG_MAP_SIZE": "10"}, "log_map_size"),
        ({"MNEMOLOG_READER_CHECK_SECONDS": "0"}, "reader_check_seconds"),
    ],
)
def test_bad_values_are_named(env: dict[str, str], needle: str) -> None:
    with pytest.raises(InvalidInput, match=needle):
        settings_from_env(env)
