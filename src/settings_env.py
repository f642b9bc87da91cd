"""The settings read back from their declarations in ``settings.py``: each one's environment
variable, type, default and bounds (``SETTINGS``), and ``Settings`` built from the environment
and checked (``settings_from_env``)."""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import msgspec
from msgspec import Meta

from .errors import InvalidInput
from .settings import ENV_PREFIX, Settings, _entries, default_data_dir

# What one entry of ``allowed_hosts`` or ``allowed_origins`` may be: a DNS name or an IPv4
# address, or an IPv6 address in brackets, with an optional port (and for an origin, its scheme).
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?"
_HOST_ENTRY = rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9a-f:.]+\])(?::[0-9]{{1,5}})?"
LIST_ENTRIES: dict[str, tuple[re.Pattern[str], str]] = {
    "allowed_hosts": (re.compile(_HOST_ENTRY), "a host name with an optional port"),
    "allowed_origins": (re.compile(f"https?://{_HOST_ENTRY}"), "an origin: http(s)://host[:port]"),
}


# The constraints of msgspec.Meta that bound a value (the others describe it).
BOUND_KINDS = ("ge", "gt", "le", "lt", "multiple_of", "min_length", "max_length", "pattern")


@dataclass(frozen=True)
class Setting:
    """One field of ``Settings`` as declared: read back from its annotation."""

    name: str
    env: str
    type: object  # the value's type, without its Meta and without ``| None``
    optional: bool  # ``| None``: may be unset
    default: object
    meta: Meta

    @property
    def description(self) -> str:
        return self.meta.description or ""

    @property
    def bounds(self) -> dict[str, object]:
        """The constraints msgspec enforces, e.g. ``{"ge": 1, "le": 65535}``."""
        found = {kind: getattr(self.meta, kind) for kind in BOUND_KINDS}
        return {kind: value for kind, value in found.items() if value is not None}


def _declared(name: str, hint: object, default: object) -> Setting:
    """Split ``Annotated[T, Meta(...)]`` or ``Annotated[T, Meta(...)] | None``."""
    args = typing.get_args(hint)
    optional = typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args
    if optional:
        (hint,) = (arg for arg in args if arg is not type(None))
    metas = [m for m in getattr(hint, "__metadata__", ()) if isinstance(m, Meta)]
    if len(metas) != 1 or not metas[0].description:
        raise TypeError(f"setting {name} must be declared with one Meta(description=...)")
    return Setting(
        name=name,
        env=ENV_PREFIX + name.upper(),
        type=typing.get_args(hint)[0],
        optional=optional,
        default=default,
        meta=metas[0],
    )


def _read_declarations() -> tuple[Setting, ...]:
    hints = typing.get_type_hints(Settings, include_extras=True)
    return tuple(
        _declared(field.name, hints[field.name], _default(field))
        for field in msgspec.structs.fields(Settings)
    )


def _default(field: msgspec.structs.FieldInfo) -> object:
    if field.default_factory is not msgspec.NODEFAULT:
        return field.default_factory()
    return field.default


SETTINGS: tuple[Setting, ...] = _read_declarations()

# Field name -> environment variable.
ENV_VARS: dict[str, str] = {setting.name: setting.env for setting in SETTINGS}

# Variables of the seed API accepted as well, when the MNEMOLOG_* one is unset.
ENV_ALIASES: dict[str, str] = {
    "upstream_base_url": "BELLA_UPSTREAM_BASE_URL",
}


def settings_from_env(environ: Mapping[str, str], **overrides: object) -> Settings:
    """Build settings from ``environ``; explicit ``overrides`` (not None) win.

    Types and bounds are checked by ``msgspec.convert`` against the declarations.
    """
    raw: dict[str, object] = {
        field: environ[var]
        for field, var in ENV_ALIASES.items()
        if environ.get(var, "") != "" and environ.get(ENV_VARS[field], "") == ""
    }
    raw.update(
        {field: environ[var] for field, var in ENV_VARS.items() if environ.get(var, "") != ""}
    )
    raw.update({k: v for k, v in overrides.items() if v is not None})
    raw.setdefault("data_dir", default_data_dir(environ))
    try:
        settings = msgspec.convert(raw, type=Settings, strict=False, dec_hook=_decode_path)
    except msgspec.ValidationError as exc:
        field = str(exc).rpartition("$.")[2].strip("`")
        raise _invalid(field, str(exc)) from exc
    _check_lists(settings)
    return settings


def _check_lists(settings: Settings) -> None:
    """Refuse an entry that could never match: a typo would otherwise fail every request."""
    for field, (form, expected) in LIST_ENTRIES.items():
        for entry in _entries(getattr(settings, field)):
            if form.fullmatch(entry) is None:
                raise _invalid(field, f"{entry!r} is not {expected}")


def _invalid(field: str, problem: str) -> InvalidInput:
    var = ENV_VARS.get(field)
    return InvalidInput(f"invalid setting {field}" + (f" ({var})" if var else "") + f": {problem}")


def _decode_path(type_: type, obj: object) -> object:
    if type_ is Path and isinstance(obj, str | Path):
        return Path(obj)
    raise TypeError(f"cannot read {type_.__name__} from {obj!r}")
