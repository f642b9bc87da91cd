"""The envelope every event shares: who acted, a sealed value, the event base class."""

from __future__ import annotations

from typing import Literal, TypeAlias

import msgspec

Protocol: TypeAlias = Literal["rest", "proxy", "mcp", "cli", "import", "system"]


class Actor(msgspec.Struct, frozen=True, kw_only=True):
    """Who caused an event: an agent identity and the surface it came through."""

    agent_id: str
    protocol: Protocol


class Sealed(msgspec.Struct, frozen=True, kw_only=True):
    """Ciphertext of a personal-data field, bound to its subject (crypto-shredding)."""

    subject: str
    nonce: bytes
    ct: bytes
    alg: str = "aes-256-gcm"


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Base of every event body."""

    schema: int = 1
