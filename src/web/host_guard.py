"""The door: a request is let in only if it names this server and no foreign page sent it.

A web page cannot read another origin's answers, but it can make the browser send requests
anywhere. Two ways in are closed here, in front of every route (the hot routes, the
framework's, the proxy, and whatever is mounted later) and before anything runs, so a refusal
changes nothing:

- DNS rebinding: a page at ``evil.example`` rebinds its name to 127.0.0.1; its requests then
  reach this server as same-origin ones, but with ``Host: evil.example``. A request whose
  ``Host`` is not a name the server answers to is refused 421 ``misdirected_host``.
- Cross-origin calls: a browser sends the page's ``Origin`` on every request but a plain GET or
  HEAD, and on every CORS request. One that is not the server's own origin (or a configured
  one) is refused 403 ``foreign_origin``, preflights included. No CORS header is ever sent, so
  nothing is ever granted. A request without ``Origin`` (any non-browser client) is let in.

Matching is exact, against a small set of allowed values, after lower-casing ASCII: nothing is
parsed, so look-alikes, userinfo, trailing dots, other spellings of an address,
percent-encoding and non-ASCII bytes cannot match.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import NamedTuple

import msgspec
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import ForeignOrigin, MisdirectedHost, MnemologError, RequestRefused
from ..settings import Settings
from ..settings_env import ENV_VARS
from .statuses import error_body, http_status

# The names of this machine's loopback interface that a client may use in ``Host``; other
# spellings of the same addresses (``127.1``, ``[::ffff:127.0.0.1]``) are refused.
LOOPBACK = ("localhost", "127.0.0.1", "[::1]")

# The scheme of a page's origin, and the port a browser leaves out of ``Host``, per ASGI scheme.
_WEB_SCHEMES = {"http": "http", "ws": "http", "https": "https", "wss": "https"}
_DEFAULT_PORTS = {"http": 80, "https": 443}

_encode = msgspec.json.Encoder().encode


class Door(NamedTuple):
    """What is let in on one port: the ``Host`` and ``Origin`` values, lower-cased."""

    hosts: frozenset[str]
    origins: frozenset[str]


def has_port(host: str) -> bool:
    """Whether ``host`` (a name, an IPv4 address or a bracketed IPv6 one) ends with a port."""
    _, colon, port = host.rpartition(":")
    return bool(colon) and not host.endswith("]") and port.isascii() and port.isdigit()


def allowed_hosts(
    names: Iterable[str], entries: Iterable[str], *, port: int, default_port: int
) -> frozenset[str]:
    """The ``Host`` values let in on ``port``.

    Each of ``names`` with the port; alone only when the port is the scheme's default, the one
    case where a client leaves it out. Each configured entry as written, and with the port
    when it has none (so a reverse proxy may forward the bare name).
    """
    hosts = {f"{name}:{port}" for name in names}
    if port == default_port:
        hosts.update(names)
    for entry in entries:
        hosts.add(entry)
        if not has_port(entry):
            hosts.add(f"{entry}:{port}")
    return frozenset(host.lower() for host in hosts)


def allowed_origins(hosts: Iterable[str], entries: Iterable[str], *, scheme: str) -> frozenset[str]:
    """The ``Origin`` values let in: a page served by this server under an allowed ``Host``
    (with the scheme it was served with), and each configured origin."""
    origins = {f"{scheme}://{host}" for host in hosts}
    origins.update(entries)
    return frozenset(origin.lower() for origin in origins)


def bound_name(host: str) -> str | None:
    """How ``Host`` names the address the server binds: None for a wildcard (``0.0.0.0``,
    ``::``), which no client may use as a name."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host.lower() or None
    if address.is_unspecified:
        return None
    return f"[{address.compressed}]" if address.version == 6 else address.compressed


def served_port(scope: Scope, fallback: int) -> int:
    """The port the request came in on (the socket's, which a test server may pick itself);
    ``fallback`` when the server does not say (a Unix socket)."""
    server = scope.get("server")
    if server is not None and isinstance(server[1], int):
        return server[1]
    return fallback


def header_values(scope: Scope) -> tuple[list[bytes], list[bytes]]:
    """Every ``Host`` and every ``Origin`` value of the request (ASGI lower-cases names)."""
    hosts: list[bytes] = []
    origins: list[bytes] = []
    for name, value in scope["headers"]:
        if name == b"host":
            hosts.append(value)
        elif name == b"origin":
            origins.append(value)
    return hosts, origins


def _text(raw: bytes) -> str | None:
    """A header value lower-cased, or None if it is not ASCII (so it can match nothing)."""
    try:
        return raw.decode("ascii").lower()
    except UnicodeDecodeError:
        return None


class HostGuard:
    """ASGI middleware: a request with a foreign ``Host`` (421) or ``Origin`` (403) is answered
    here with the error body and never reaches ``app``; lifespan messages pass through."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        port: int,
        names: Iterable[str] = LOOPBACK,
        hosts: Iterable[str] = (),
        origins: Iterable[str] = (),
    ) -> None:
        self._app = app
        self._port = port
        self._names = tuple(name.lower() for name in names)
        self._hosts = tuple(hosts)
        self._origins = tuple(origins)
        self._doors: dict[tuple[str, int], Door] = {}  # one per (scheme, port) served

    @classmethod
    def from_settings(cls, app: ASGIApp, settings: Settings) -> HostGuard:
        bound = bound_name(settings.host)
        names = LOOPBACK if bound is None or bound in LOOPBACK else (*LOOPBACK, bound)
        return cls(
            app,
            port=settings.port,
            names=names,
            hosts=settings.allowed_host_list,
            origins=settings.allowed_origin_list,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            refusal = self.refusal(scope)
            if refusal is not None:
                await refuse(scope, send, refusal)
                return
        await self._app(scope, receive, send)

    def refusal(self, scope: Scope) -> RequestRefused | None:
        """Why the request may not come in, or None."""
        door = self._door(scope)
        hosts, origins = header_values(scope)
        if not hosts:
            return MisdirectedHost("the request has no Host header")
        if len(hosts) > 1:
            return MisdirectedHost("the request has more than one Host header")
        if _text(hosts[0]) not in door.hosts:
            return MisdirectedHost(
                "this server answers only to localhost, 127.0.0.1 and [::1] on its port, and "
                f"the names in {ENV_VARS['allowed_hosts']}"
            )
        if len(origins) > 1:
            return ForeignOrigin("the request has more than one Origin header")
        if origins and _text(origins[0]) not in door.origins:
            return ForeignOrigin(
                "requests from web pages of other origins are refused; allowed: the server's "
                f"own origin and those in {ENV_VARS['allowed_origins']}"
            )
        return None

    def _door(self, scope: Scope) -> Door:
        scheme = _WEB_SCHEMES.get(scope.get("scheme") or "http", "http")
        port = served_port(scope, self._port)
        door = self._doors.get((scheme, port))
        if door is None:
            hosts = allowed_hosts(
                self._names, self._hosts, port=port, default_port=_DEFAULT_PORTS[scheme]
            )
            door = Door(hosts, allowed_origins(hosts, self._origins, scheme=scheme))
            self._doors[(scheme, port)] = door
        return door


async def refuse(
    scope: Scope, send: Send, exc: MnemologError, extra: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """Answer ``exc`` with its status and error body, before any route ran."""
    body = _encode(error_body(exc))
    status = http_status(exc)
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    headers.extend(extra)
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
    elif "websocket.http.response" in (scope.get("extensions") or {}):
        await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        # Closed before the handshake is accepted: the server answers the handshake 403.
        await send({"type": "websocket.close", "code": 1008})
