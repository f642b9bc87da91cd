"""Hypothesis strategies that build any event of the union from its type hints."""

from __future__ import annotations

import types
import typing
from typing import Any

import msgspec
from hypothesis import strategies as st

from mnemolog.eventlog import EVENT_TYPES, Actor
from mnemolog.eventlog.events import Event

_I64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_FLOAT = st.floats(allow_nan=False, allow_infinity=False)


def for_type(tp: Any) -> st.SearchStrategy[Any]:
    """A strategy for a type as it appears in an event's fields."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(for_type(a) for a in args))
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin is list:
        return st.lists(for_type(args[0]), max_size=3)
    if origin is dict:
        return st.dictionaries(for_type(args[0]), for_type(args[1]), max_size=3)
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return struct_of(tp)
    simple: dict[Any, st.SearchStrategy[Any]] = {
        str: st.text(max_size=40),
        int: _I64,
        float: _FLOAT,
        bool: st.booleans(),
        bytes: st.binary(max_size=40),
        type(None): st.none(),
    }
    return simple[tp]


def struct_of(cls: type[msgspec.Struct]) -> st.SearchStrategy[Any]:
    hints = typing.get_type_hints(cls)
    fields = {
        f.name: for_type(hints[f.name])
        for f in msgspec.structs.fields(cls)
        if not (issubclass(cls, Event) and f.name == "schema")
    }
    return st.builds(cls, **fields)


any_event = st.one_of(*(struct_of(t) for t in EVENT_TYPES))
any_actor = struct_of(Actor)
