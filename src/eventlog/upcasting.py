"""Upcasters: old schema versions of an event still decode.

An upcaster turns the raw mapping of ``(type, schema)`` into the mapping of ``schema + 1``.
Decoding runs the chain until the mapping reaches the schema the code writes today, then
converts it to the current Struct (eventsourcing's ``upcast_v1_v2`` pattern).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Mapping_ = dict[str, Any]
Upcaster = Callable[[Mapping_], Mapping_]


class MissingUpcaster(LookupError):
    """No step is registered from a stored schema toward the current one."""


class Upcasters:
    """A registry of upcasting steps keyed by ``(type, from_schema)``."""

    def __init__(self, current: Mapping[str, int]) -> None:
        self._current = dict(current)
        self._steps: dict[tuple[str, int], Upcaster] = {}

    def register(self, event_type: str, from_schema: int) -> Callable[[Upcaster], Upcaster]:
        """Decorator: register the step from ``from_schema`` to ``from_schema + 1``."""

        def decorate(step: Upcaster) -> Upcaster:
            self._steps[(event_type, from_schema)] = step
            return step

        return decorate

    def needs_upcast(self, event_type: str, schema: int) -> bool:
        return schema < self._current.get(event_type, schema)

    def upcast(self, mapping: Mapping_) -> Mapping_:
        """Run the chain on a raw event mapping up to the current schema."""
        event_type = str(mapping["type"])
        schema = int(mapping.get("schema", 1))
        target = self._current.get(event_type, schema)
        while schema < target:
            step = self._steps.get((event_type, schema))
            if step is None:
                raise MissingUpcaster(f"no upcaster for {event_type} schema {schema}")
            mapping = dict(step(dict(mapping)))
            schema += 1
            mapping["schema"] = schema
        return mapping
