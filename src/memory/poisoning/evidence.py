"""What a poisoning rule found: the reason, and the matched span of the normalised text cut
short."""

from __future__ import annotations

import msgspec

SPAN_CHARS = 60


class Evidence(msgspec.Struct, frozen=True, kw_only=True):
    reason: str  # one of ``rules.REASONS``
    span: str  # what matched, in the normalised text, cut short


def short(span: str) -> str:
    span = " ".join(span.split())
    return span if len(span) <= SPAN_CHARS else span[: SPAN_CHARS - 1] + "\u2026"
