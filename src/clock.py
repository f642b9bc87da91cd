"""Instants as UTC nanoseconds (the log's unit) and back to ISO 8601 text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import overload

from .errors import InvalidInput

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def to_ns(moment: datetime) -> int:
    """An aware datetime as UTC nanoseconds, clamped to 64 bits (years 1677 to 2262).

    No log time lies outside that range, so clamping keeps every comparison with one exact,
    while an instant such as 0001-01-01 stays acceptable input.
    """
    ns = (moment - _EPOCH) // _MICROSECOND * 1000
    return min(max(ns, _I64_MIN), _I64_MAX - 999)


def parse_instant(text: str) -> int:
    """An ISO 8601 instant with an explicit timezone, as UTC nanoseconds."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no timezone")
    return to_ns(moment)


@overload
def iso(ns: int) -> str: ...


@overload
def iso(ns: None) -> None: ...


def iso(ns: int | None) -> str | None:
    """UTC nanoseconds as ISO 8601 with microseconds and ``Z``."""
    if ns is None:
        return None
    return _iso(ns)


@lru_cache(maxsize=1 << 16)
def _iso(ns: int) -> str:
    # Cached: answers show the same few instants again and again (a version's validFrom is
    # also its createdAt), and formatting one cost more than a search's scoring of it.
    moment = _EPOCH + timedelta(microseconds=ns // 1000)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_as_of_instant(text: str, name: str = "asOf") -> int:
    """An ``asOf`` (or ``factAsOf``, ``name``) instant: a date-time with an explicit timezone,
    or a plain date (UTC midnight), as UTC nanoseconds; ``InvalidInput`` otherwise."""
    if len(text) == 10:
        moment = parse_iso(text, name)
        moment = datetime(moment.year, moment.month, moment.day, tzinfo=UTC)
    else:
        if "T" not in text:
            raise InvalidInput(f"{name} must be a date (YYYY-MM-DD) or a date-time with a timezone")
        moment = parse_iso(text, name)
        if moment.tzinfo is None:
            raise InvalidInput(
                f"{name} needs an explicit timezone (2026-07-03T12:00:00Z) or a plain date"
            )
    # Times are shown to the microsecond while the log keeps nanoseconds: an instant names the
    # whole microsecond, so an asOf copied from a validFrom selects that version.
    return to_ns(moment) + 999


def parse_iso(text: str, name: str) -> datetime:
    """An ISO 8601 date or date-time; ``InvalidInput`` naming the field ``name`` otherwise."""
    try:
        return datetime.fromisoformat(text)
    except ValueError as exc:
        raise InvalidInput(f"{name} is not an ISO 8601 date-time: {text!r}") from exc


def parse_observed_at(text: str | None) -> str | None:
    """An ``observedAt``: ISO 8601 with an explicit timezone (kept as given), else 400."""
    if text is None:
        return None
    if parse_iso(text, "observedAt").tzinfo is None:
        raise InvalidInput("observedAt needs an explicit timezone, e.g. 2026-07-03T12:00:00Z")
    return text
