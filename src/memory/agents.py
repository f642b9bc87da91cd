"""Agents and their API keys: who a request is, and which containers it may reach.

A key is ``mnl_<key id>_<secret>``. The key id is public (it finds the key); only the sha256
of the secret is recorded (``agent.key_added``), so neither the log, an export of it nor a
projection can give the key back. A presented secret is hashed and compared in constant time,
an unknown key id against a dummy digest, so the time taken says nothing about which part was
wrong. Every event a request causes is stamped with its key's agent by the server, never by
the request body. With no key made, the door is open to loopback callers as the ``local``
agent, as before keys existed.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
from collections.abc import Sequence

import msgspec

from ..errors import AdminRequired, ContainerForbidden, InvalidInput, LastLiveKey, NotFound
from ..eventlog import Actor, Draft
from ..eventlog.events import AgentKeyAdded, AgentKeyRevoked, Protocol
from ..projections.agents import AgentProjection, KeyRow
from .record import Recorder

LOCAL_AGENT = "local"
# Names the server uses itself; a key cannot take one.
RESERVED_AGENTS = frozenset({LOCAL_AGENT, "mnemolog", "replay"})
AGENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
TOKEN = re.compile(r"mnl_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")
MAX_TOKEN = 256  # longer is refused before any work
_DUMMY = hashlib.sha256(b"no such key").hexdigest()


class Caller(msgspec.Struct, frozen=True, kw_only=True):
    """Who a request is: its agent, and the containers its key may reach (None: all)."""

    agent_id: str = LOCAL_AGENT
    containers: frozenset[str] | None = None
    key_id: str | None = None
    # May quarantine and roll back agents: the user (``LOCAL``) and admin keys.
    admin: bool = False

    def actor(self, protocol: Protocol) -> Actor:
        return Actor(agent_id=self.agent_id, protocol=protocol)

    def may(self, container_tag: str) -> bool:
        return self.containers is None or container_tag in self.containers

    @property
    def scoped(self) -> bool:
        return self.containers is not None

    def reach(self, container_tag: str | None) -> None:
        """Refuse a container the key may not reach; ``None`` is every container, which a
        key scoped to some may not ask for."""
        if container_tag is None:
            if self.scoped:
                raise ContainerForbidden(
                    "this key reaches only its own containers: name one (containerTag)"
                )
        elif not self.may(container_tag):
            raise ContainerForbidden(f"this key may not reach container {container_tag!r}")

    def require_admin(self) -> None:
        if not self.admin:
            raise AdminRequired(
                f"agent {self.agent_id!r} may not do this: only the user or an admin key may"
            )

    def owns(self, container_tag: str | None, what: str) -> None:
        """A thing of a container out of reach (or of every container, for a scoped key)
        does not exist for this caller: it cannot probe another container's ids."""
        if self.scoped and (container_tag is None or not self.may(container_tag)):
            raise NotFound(f"no {what}")


LOCAL = Caller(admin=True)


class NewKey(msgspec.Struct, frozen=True, kw_only=True):
    key_id: str
    agent_id: str
    token: str  # shown once
    containers: list[str] | None
    seq: int


class Agents:
    def __init__(self, *, recorder: Recorder, projection: AgentProjection) -> None:
        self._recorder = recorder
        self._projection = projection
        self._revoking = threading.Lock()

    @property
    def required(self) -> bool:
        """Whether a request must carry a key: once any key is live, every one must."""
        return self._projection.any_live()

    def add(
        self, agent_id: str, containers: Sequence[str] | None, actor: Actor, *, admin: bool = False
    ) -> NewKey:
        check_agent_name(agent_id)
        if containers is not None and not containers:
            raise InvalidInput("a key scoped to containers needs at least one")
        if admin and containers is not None:
            raise InvalidInput("an admin key reaches every container: it cannot be scoped")
        key_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        scope = None if containers is None else sorted(set(containers))
        event = AgentKeyAdded(
            key_id=key_id, agent_id=agent_id, digest=_digest(secret), containers=scope, admin=admin
        )
        seq = self._recorder.record([Draft(actor, event)]).seqs[0]
        return NewKey(
            key_id=key_id,
            agent_id=agent_id,
            token=f"mnl_{key_id}_{secret}",
            containers=scope,
            seq=seq,
        )

    def revoke(
        self, key_id: str, actor: Actor, *, agent_id: str | None = None, keep_one: bool = False
    ) -> int:
        """Revoke a live key (of ``agent_id``, when given); with ``keep_one``, never the last
        live one, whose revocation would open the door to unkeyed loopback callers."""
        with self._revoking:  # two revocations may not both pass the last-key check
            key = self._projection.live(key_id)
            if key is None or agent_id not in (None, key.agent_id):
                owner = f" of agent {agent_id!r}" if agent_id else ""
                raise NotFound(f"no live key {key_id!r}{owner}")
            if keep_one and self._projection.live_count() == 1:
                raise LastLiveKey(
                    f"{key_id!r} is the last live key: without it, loopback callers need none"
                    " (revoke it with `mnemolog keys revoke`, the server stopped)"
                )
            return self._recorder.record([Draft(actor, AgentKeyRevoked(key_id=key_id))]).seqs[0]

    def keys(self) -> list[KeyRow]:
        return self._projection.keys()

    def live_keys(self) -> list[KeyRow]:
        """The keys that open the door now."""
        return [k for k in self.keys() if k.revoked_at is None]

    def admits(self, caller: object) -> bool:
        """Whether a caller let in earlier still would be: its key is live, or, for a caller
        let in without one, no key is required yet."""
        if not isinstance(caller, Caller) or caller.key_id is None:
            return not self.required
        return self._projection.live(caller.key_id) is not None

    def authenticate(self, token: str) -> Caller | None:
        """The caller a presented key is, or None if it opens nothing."""
        if len(token) > MAX_TOKEN:
            return None
        found = TOKEN.fullmatch(token)
        key = None if found is None else self._projection.live(found.group(1))
        presented = _digest(found.group(2) if found is not None else token)
        if not hmac.compare_digest(presented, key.digest if key is not None else _DUMMY):
            return None
        if key is None:
            return None
        containers = None if key.containers is None else frozenset(key.containers)
        return Caller(
            agent_id=key.agent_id, containers=containers, key_id=key.key_id, admin=key.admin
        )


def check_agent_name(agent_id: str) -> None:
    """Refuse a name no key can have: malformed, or one of the server's own."""
    if AGENT_NAME.fullmatch(agent_id) is None:
        raise InvalidInput(f"agent name {agent_id!r}: 1 to 64 letters, digits, '_', '.' or '-'")
    if agent_id in RESERVED_AGENTS:
        raise InvalidInput(f"agent name {agent_id!r} is the server's own")


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()
