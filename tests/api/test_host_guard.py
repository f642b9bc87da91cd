"""The door (``web/host_guard.py``) over a real server: every route refuses a foreign ``Host``
(421) or ``Origin`` (403) with the error body and appends nothing; no response carries a CORS
grant; the server's own names and origins are still served."""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.types import Receive, Scope, Send

from mnemolog.api import create_app
from mnemolog.errors import ForeignOrigin, InvalidInput, MisdirectedHost
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings
from mnemolog.settings_env import settings_from_env
from mnemolog.web.host_guard import HostGuard, bound_name

from ..servers import app_server

# Configured beside the built-in names: one bare name, one with a port other than the served one.
ALLOWED_HOSTS = "mnemolog.test,proxy.test:9000"
ALLOWED_ORIGINS = "https://ui.test"

# Routes that must be guarded although the OpenAPI document may not list them (mounted apps,
# the docs, an unknown path).
EXTRA_ROUTES = [
    ("GET", "/docs"),
    ("GET", "/openapi.json"),
    ("GET", "/health"),
    ("POST", "/v1/chat/completions"),
    ("GET", "/v1/models"),
    ("GET", "/events"),
    ("GET", "/no-such-path"),
    ("POST", "/mcp"),
    ("GET", "/mcp"),
    ("GET", "/ui"),
    ("OPTIONS", "/memories"),
    ("HEAD", "/health"),
]
# Bodies the routes would act on, were they let in (any other body route gets ``{}``).
BODIES: dict[tuple[str, str], object] = {
    ("POST", "/memories"): {"containerTag": "door", "memories": [{"content": "Planted fact"}]},
    ("POST", "/search"): {"q": "bees", "containerTag": "door"},
    ("POST", "/documents"): {"containerTag": "door", "content": "A planted document"},
    ("PUT", "/profile"): {"containerTag": "door", "static": ["Planted"]},
    ("PATCH", "/memories/{memory_id}"): {"content": "Ada keeps wasps"},
    ("POST", "/memories/{memory_id}/forget"): {"reason": "planted"},
    ("POST", "/v1/chat/completions"): {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
    },
}


class Route(NamedTuple):
    method: str
    path: str  # path parameters filled in
    body: bytes | None


@dataclass
class Server:
    base_url: str
    port: int
    routes: list[Route]  # every route of the OpenAPI document, and the extras
    client: httpx.Client

    @property
    def good_host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def head(self) -> int:
        """The log head, asked through the front door."""
        response = self.client.get("/health", headers={"host": self.good_host})
        assert response.status_code == 200, response.text
        head: int = response.json()["log"]["head"]
        return head


def _no_cors_grant(response: httpx.Response) -> None:
    """No response, refused or served, may grant anything cross-origin."""
    granted = [name for name in response.headers if name.lower().startswith("access-control-")]
    assert not granted, (response.request.url, granted)


def _routes(document: dict[str, dict[str, dict[str, object]]], memory_id: str) -> list[Route]:
    """Every operation of the OpenAPI document, then the extras; a real memory's id in the
    memory routes, so that a route let in would change something."""
    found = {(method.upper(), path) for path, ops in document["paths"].items() for method in ops}
    routes = []
    for method, path in sorted(found | set(EXTRA_ROUTES)):
        body = BODIES.get((method, path), {}) if method in ("POST", "PUT", "PATCH") else None
        filled = path.replace("{memory_id}", memory_id)
        filled = "/".join("x" if part.startswith("{") else part for part in filled.split("/"))
        routes.append(Route(method, filled, None if body is None else json.dumps(body).encode()))
    return routes


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data_dir: Path = tmp_path_factory.mktemp("door") / "data"
    # settings.port stays 8080: the server is bound to a free port, and the guard must go by
    # the port the request came in on.
    configured = Settings(
        data_dir=data_dir,
        embedder="quality",
        allowed_hosts=ALLOWED_HOSTS,
        allowed_origins=ALLOWED_ORIGINS,
    )
    runtime = Runtime(configured)
    try:
        with (
            app_server(create_app(runtime)) as base_url,
            httpx.Client(
                base_url=base_url, timeout=10, event_hooks={"response": [_no_cors_grant]}
            ) as client,
        ):
            port = int(base_url.rpartition(":")[2])
            document = client.get("/openapi.json").json()
            written = client.post(
                "/memories",
                json={"containerTag": "door", "memories": [{"content": "Ada keeps bees"}]},
            )
            memory_id = written.json()["memories"][0]["id"]
            yield Server(base_url, port, _routes(document, memory_id), client)
    finally:
        runtime.close()


def send(server: Server, route: Route, **headers: str | bytes) -> httpx.Response:
    if route.body is not None:
        headers.setdefault("content-type", "application/json")
    raw_headers = [
        (k.encode(), v if isinstance(v, bytes) else v.encode()) for k, v in headers.items()
    ]
    return server.client.request(route.method, route.path, content=route.body, headers=raw_headers)


HEALTH = Route("GET", "/health", None)


def raw(
    server: Server, header_lines: list[bytes], route: Route = HEALTH
) -> tuple[int, dict[str, str], bytes]:
    """One request written by hand, for what an HTTP client refuses to send (no Host, two)."""
    head = [f"{route.method} {route.path} HTTP/1.1".encode(), *header_lines, b"connection: close"]
    if route.body is not None:
        head += [b"content-type: application/json", b"content-length: %d" % len(route.body)]
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"\r\n".join(head) + b"\r\n\r\n" + (route.body or b""))
        response = http.client.HTTPResponse(sock, method=route.method)
        response.begin()
        headers = {name.lower(): value for name, value in response.getheaders()}
        return response.status, headers, response.read()


def assert_refused(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, (response.request.method, response.request.url)
    assert response.headers["content-type"] == "application/json"
    if response.request.method != "HEAD":
        assert response.json()["error"]["code"] == code


# ``{port}`` is the served port, ``{other}`` another one. Each must be refused on every route.
FOREIGN_HOSTS = [
    "evil.com",
    "evil.com:{port}",
    "EVIL.COM:{port}",
    "localhost.evil.com:{port}",
    "LOCALHOST.evil.com:{port}",
    "127.0.0.1.nip.io:{port}",
    "localhost:{port}.evil.com",
    "127.0.0.1:{port}.nip.io",
    "127.0.0.1:{other}",
    "localhost:{other}",
    "[::1]:{other}",
    "localhost:8080",  # the configured port, which is not the one served
    "0.0.0.0:{port}",
    "0.0.0.0",
    "evil@localhost:{port}",
    "localhost:{port}@evil.com",
    "localhost.:{port}",
    "localhost.",
    "localhost",  # no port: a client leaves it out only for port 80
    "127.0.0.1",
    "[::1]",
    "[::ffff:127.0.0.1]:{port}",
    "[0:0:0:0:0:0:0:1]:{port}",
    "[::1%25lo]:{port}",
    "::1:{port}",
    "[::]:{port}",
    "%6cocalhost:{port}",
    "127.0.0.1%3a{port}",
    "local host:{port}",
    "localhost :{port}",
    "localhost:\t{port}",
    "l\u043ecalhost:{port}",  # a Cyrillic o
    "\uff4cocalhost:{port}",  # a fullwidth l
    "localhost:\u0661{port}",  # an Arabic-Indic digit
    "127.1:{port}",
    "2130706433:{port}",
    "0x7f000001:{port}",
    "127.000.000.001:{port}",
    "127.0.0.2:{port}",
    "localhost:0{port}",
    "localhost:{port}:{port}",
    "localhost:",
    ":{port}",
    "",
    "*",
    "localhost:{port}/",
    "localhost:{port}?x",
    "http://localhost:{port}",
    "mnemolog.test.evil.com:{port}",
    "mnemolog.test:{port}.evil.com",
    "proxy.test:{port}",  # configured with port 9000 only
    "proxy.test",
    "x" * 4000,
]


def _host(server: Server, template: str) -> bytes:
    other = 9999 if server.port != 9999 else 9998
    return template.format(port=server.port, other=other).encode("utf-8")


@pytest.mark.parametrize("template", FOREIGN_HOSTS, ids=range(len(FOREIGN_HOSTS)))
def test_a_foreign_host_is_refused_on_every_route_and_appends_nothing(
    server: Server, template: str
) -> None:
    host = _host(server, template)
    if host == b"localhost:%d" % server.port:  # "localhost:8080" when 8080 is served
        pytest.skip("the served port")
    before = server.head()
    for route in server.routes:
        assert_refused(send(server, route, host=host), 421, "misdirected_host")
    assert server.head() == before


HAND_WRITTEN = {
    "no-host": [],
    "two-hosts-one-foreign": [b"host: 127.0.0.1:{port}", b"host: evil.com"],
    "two-hosts-foreign-first": [b"host: evil.com", b"host: 127.0.0.1:{port}"],
    "two-good-hosts": [b"host: 127.0.0.1:{port}", b"host: 127.0.0.1:{port}"],
    "folded-host": [b"host: 127.0.0.1:{port},evil.com"],
}


@pytest.mark.parametrize("lines", HAND_WRITTEN.values(), ids=HAND_WRITTEN.keys())
def test_a_missing_or_doubled_host_is_refused_on_every_route(
    server: Server, lines: list[bytes]
) -> None:
    header_lines = [line.replace(b"{port}", b"%d" % server.port) for line in lines]
    before = server.head()
    for route in server.routes:
        status, headers, body = raw(server, header_lines, route)
        assert status == 421, (route, body)
        assert not any(name.startswith("access-control-") for name in headers)
        if route.method != "HEAD":
            assert b'"code":"misdirected_host"' in body
    assert server.head() == before


def test_an_http_1_0_request_without_host_is_refused(server: Server) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.0\r\n\r\n")
        response = http.client.HTTPResponse(sock)
        response.begin()
        assert response.status == 421


# Each must be refused on every route, from a request whose Host is good.
FOREIGN_ORIGINS = [
    "null",
    "NULL",
    "",
    "*",
    "http://evil.com",
    "HTTP://EVIL.COM",
    "https://evil.com",
    "http://localhost.evil.com:{port}",
    "http://127.0.0.1.nip.io:{port}",
    "http://localhost:{port}.evil.com",
    "http://127.0.0.1:{port}.nip.io",
    "http://localhost:{other}",
    "http://127.0.0.1:{other}",
    "http://localhost",
    "http://127.0.0.1",
    "https://localhost:{port}",  # not the scheme the server serves
    "http://127.0.0.1:{port}/",
    "http://127.0.0.1:{port}/docs",
    "http://evil@127.0.0.1:{port}",
    "http://[::ffff:127.0.0.1]:{port}",
    "http://0.0.0.0:{port}",
    "http://localhost.:{port}",
    "127.0.0.1:{port}",
    "ws://127.0.0.1:{port}",
    "file://",
    "chrome-extension://abcdefghijklmnop",
    "http://proxy.test:{port}",
    "http://ui.test",  # configured as https only
    "https://ui.test.evil.com",
    "https://ui.test:443",
    "http://l\u043ecalhost:{port}",
]


@pytest.mark.parametrize("template", FOREIGN_ORIGINS, ids=range(len(FOREIGN_ORIGINS)))
def test_a_foreign_origin_is_refused_on_every_route_and_appends_nothing(
    server: Server, template: str
) -> None:
    origin = _host(server, template)
    before = server.head()
    for route in server.routes:
        response = send(server, route, host=server.good_host, origin=origin)
        assert_refused(response, 403, "foreign_origin")
    assert server.head() == before


def test_two_origins_are_refused(server: Server) -> None:
    good = b"origin: http://127.0.0.1:%d" % server.port
    for lines in ([good, b"origin: http://evil.com"], [good, good]):
        status, _, body = raw(server, [b"host: 127.0.0.1:%d" % server.port, *lines])
        assert status == 403 and b'"code":"foreign_origin"' in body


@pytest.mark.parametrize("origin", ["null", "http://evil.com", "http://localhost.evil.com"])
def test_a_foreign_preflight_is_refused_and_never_granted(server: Server, origin: str) -> None:
    before = server.head()
    for path in sorted({route.path for route in server.routes}):
        response = server.client.options(
            path,
            headers={
                "host": server.good_host,
                "origin": origin,
                "access-control-request-method": "POST",
                "access-control-request-headers": "content-type, authorization",
            },
        )
        assert_refused(response, 403, "foreign_origin")  # and the hook saw no grant
    assert server.head() == before


def test_a_preflight_from_the_own_origin_is_not_granted_either(server: Server) -> None:
    response = server.client.options(
        "/memories",
        headers={
            "host": server.good_host,
            "origin": f"http://{server.good_host}",
            "access-control-request-method": "POST",
        },
    )
    assert response.status_code == 405  # no CORS anywhere: the hook checked the headers


def test_the_own_names_are_served(server: Server) -> None:
    port = server.port
    good = [
        f"127.0.0.1:{port}",
        f"localhost:{port}",
        f"LocalHost:{port}",
        f"[::1]:{port}",
        f"mnemolog.test:{port}",
        "mnemolog.test",
        "MNEMOLOG.TEST",
        "proxy.test:9000",
    ]
    for host in good:
        response = server.client.get("/health", headers={"host": host})
        assert response.status_code == 200, host
        assert server.client.get("/openapi.json", headers={"host": host}).status_code == 200


def test_the_own_origins_are_served(server: Server) -> None:
    port = server.port
    for host, origin in [
        (f"127.0.0.1:{port}", f"http://127.0.0.1:{port}"),
        (f"localhost:{port}", f"http://localhost:{port}"),
        (f"localhost:{port}", f"HTTP://LOCALHOST:{port}"),
        (f"[::1]:{port}", f"http://[::1]:{port}"),
        # An origin is the page's, not the request's: another allowed name is fine.
        (f"127.0.0.1:{port}", f"http://localhost:{port}"),
        (f"mnemolog.test:{port}", f"http://mnemolog.test:{port}"),
        ("mnemolog.test", "http://mnemolog.test"),
        ("proxy.test:9000", "http://proxy.test:9000"),
        ("mnemolog.test", "https://ui.test"),
    ]:
        response = server.client.get("/health", headers={"host": host, "origin": origin})
        assert response.status_code == 200, (host, origin)


def test_a_page_of_the_own_origin_can_write_and_search(server: Server) -> None:
    headers = {"host": server.good_host, "origin": f"http://{server.good_host}"}
    before = server.head()
    written = server.client.post(
        "/memories",
        json={"containerTag": "door", "memories": [{"content": "Ada keeps bees"}]},
        headers=headers,
    )
    assert written.status_code == 200, written.text
    found = server.client.post(
        "/search", json={"q": "bees", "containerTag": "door"}, headers=headers
    )
    assert found.status_code == 200, found.text
    # The recall's trace is committed behind the answer; /inspect waits for it.
    trace = server.client.get(f"/inspect/{found.json()['traceId']}", headers=headers)
    assert trace.status_code == 200, trace.text
    assert server.head() == before + 2  # a dedup and the recall


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
def test_simple_requests_stay_refused(server: Server, content_type: str) -> None:
    """A form or text/plain body, which a page may send without a preflight: refused 403 from
    a foreign page, and 415 from anywhere else, as before."""
    before = server.head()
    body = b'{"containerTag": "door", "memories": [{"content": "planted"}]}'
    for path in ("/memories", "/search", "/documents", "/import", "/v1/chat/completions"):
        for origin, status in [("http://evil.com", 403), (None, 415)]:
            headers = {"host": server.good_host, "content-type": content_type}
            if origin is not None:
                headers["origin"] = origin
            response = server.client.post(path, content=body, headers=headers)
            assert response.status_code == status, (path, origin, response.text)
            assert "code" in response.json()["error"]
    assert server.head() == before


def test_every_route_is_covered(server: Server) -> None:
    paths = {route.path for route in server.routes}
    assert {"/memories", "/search", "/events", "/log/export", "/inspect", "/import"} <= paths
    assert len(server.routes) >= 25


# The matching itself, on ASGI scopes: no server needed.


async def _refusing_app(scope: Scope, receive: Receive, send: Send) -> None:
    raise AssertionError("a refused request reached the app")


async def _echo_app(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "reached", "scope": scope["type"]})


def _run(app: HostGuard, asgi_scope: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages ``app`` sends for one scope."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        raise AssertionError("the guard reads nothing")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(asgi_scope, receive, send))
    return sent


SERVED = 8080
# What a guard on port 8080 with ``mnemolog.test`` configured lets in, written out by hand.
LET_IN_HOSTS = {
    "localhost:8080",
    "127.0.0.1:8080",
    "[::1]:8080",
    "mnemolog.test",
    "mnemolog.test:8080",
}
LET_IN_ORIGINS = {f"http://{host}" for host in LET_IN_HOSTS} | {"https://ui.test"}
GUARD = HostGuard(_refusing_app, port=SERVED, hosts=["mnemolog.test"], origins=["https://ui.test"])


def scope(
    host: bytes | None,
    origin: bytes | None = None,
    *,
    kind: str = "http",
    port: int | None = SERVED,
    scheme: str = "http",
) -> dict[str, object]:
    headers = [(b"host", host)] if host is not None else []
    if origin is not None:
        headers.append((b"origin", origin))
    return {
        "type": kind,
        "scheme": scheme,
        "headers": headers,
        "server": None if port is None else ("127.0.0.1", port),
    }


def _near(allowed: set[str]) -> st.SearchStrategy[str]:
    """Strings close to an allowed one: an edit, an affix, a change of case."""
    base = st.sampled_from(sorted(allowed))
    affix = st.text(min_size=1, max_size=4)
    return st.one_of(
        st.tuples(base, affix).map(lambda t: t[0] + t[1]),
        st.tuples(affix, base).map(lambda t: t[0] + t[1]),
        st.tuples(base, st.integers(0, 40), affix).map(
            lambda t: t[0][: t[1]] + t[2] + t[0][t[1] + 1 :]
        ),
        st.tuples(base, st.integers(0, 40)).map(lambda t: t[0][: t[1]] + t[0][t[1] + 1 :]),
        st.tuples(base, st.lists(st.booleans(), min_size=40, max_size=40)).map(
            lambda t: "".join(c.upper() if up else c for c, up in zip(t[0], t[1], strict=False))
        ),
        st.text(max_size=30),
    )


@settings(max_examples=400)
@given(_near(LET_IN_HOSTS))
def test_a_host_is_let_in_exactly_when_it_is_an_allowed_one(host: str) -> None:
    refusal = GUARD.refusal(scope(host.encode("utf-8")))
    assert (refusal is None) == (host.lower() in LET_IN_HOSTS and host.isascii())
    if refusal is not None:
        assert isinstance(refusal, MisdirectedHost)


@settings(max_examples=400)
@given(_near(LET_IN_ORIGINS))
def test_an_origin_is_let_in_exactly_when_it_is_an_allowed_one(origin: str) -> None:
    refusal = GUARD.refusal(scope(b"127.0.0.1:8080", origin.encode("utf-8")))
    assert (refusal is None) == (origin.lower() in LET_IN_ORIGINS and origin.isascii())
    if refusal is not None:
        assert isinstance(refusal, ForeignOrigin)


@given(st.binary(max_size=40))
def test_any_bytes_are_refused_or_allowed_never_an_error(raw_host: bytes) -> None:
    refusal = GUARD.refusal(scope(raw_host, raw_host))
    assert refusal is None or isinstance(refusal, MisdirectedHost | ForeignOrigin)


def test_the_port_is_the_one_the_request_came_in_on() -> None:
    assert GUARD.refusal(scope(b"localhost:4000", port=4000)) is None
    assert GUARD.refusal(scope(b"localhost:8080", port=4000)) is not None
    assert GUARD.refusal(scope(b"localhost:8080", port=None)) is None  # a Unix socket


def test_a_host_without_port_is_let_in_only_on_the_default_port() -> None:
    assert GUARD.refusal(scope(b"localhost", port=80)) is None
    assert GUARD.refusal(scope(b"localhost", b"http://localhost", port=80)) is None
    assert GUARD.refusal(scope(b"[::1]", b"http://[::1]", port=80)) is None
    assert GUARD.refusal(scope(b"localhost", port=443)) is not None
    tls = scope(b"localhost", b"https://localhost", port=443, scheme="https")
    assert GUARD.refusal(tls) is None
    tls = scope(b"localhost", b"http://localhost", port=443, scheme="https")
    assert GUARD.refusal(tls) is not None


@pytest.mark.parametrize(
    ("host", "name"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("::1", "[::1]"),
        ("0:0:0:0:0:0:0:1", "[::1]"),
        ("192.168.1.5", "192.168.1.5"),
        ("fd00::5", "[fd00::5]"),
        ("MyHost.lan", "myhost.lan"),
        ("0.0.0.0", None),
        ("::", None),
        ("", None),
    ],
)
def test_the_bound_address_is_named_as_a_client_names_it(host: str, name: str | None) -> None:
    assert bound_name(host) == name


def test_a_specific_bound_address_is_let_in_a_wildcard_is_not() -> None:
    lan = HostGuard.from_settings(_refusing_app, Settings(host="192.168.1.5"))
    assert lan.refusal(scope(b"192.168.1.5:8080")) is None
    assert lan.refusal(scope(b"127.0.0.1:8080")) is None
    everywhere = HostGuard.from_settings(_refusing_app, Settings(host="0.0.0.0"))
    assert everywhere.refusal(scope(b"0.0.0.0:8080")) is not None
    assert everywhere.refusal(scope(b"192.168.1.5:8080")) is not None


def test_a_refused_websocket_gets_the_error_as_its_handshake_answer() -> None:
    sent = _run(GUARD, scope(b"evil.com:8080", kind="websocket", scheme="ws"))
    assert sent == [{"type": "websocket.close", "code": 1008}]
    with_response = {
        **scope(b"127.0.0.1:8080", b"http://evil.com", kind="websocket", scheme="ws"),
        "extensions": {"websocket.http.response": {}},
    }
    start, body = _run(GUARD, with_response)
    assert (start["type"], start["status"]) == ("websocket.http.response.start", 403)
    assert body["type"] == "websocket.http.response.body"
    assert json.loads(body["body"])["error"]["code"] == "foreign_origin"


def test_what_is_let_in_reaches_the_app_lifespan_included() -> None:
    guard = HostGuard(_echo_app, port=SERVED)
    websocket = scope(b"localhost:8080", b"http://localhost:8080", kind="websocket", scheme="ws")
    for allowed in (scope(b"localhost:8080"), websocket, {"type": "lifespan"}):
        assert _run(guard, allowed) == [{"type": "reached", "scope": allowed["type"]}]


def test_a_refusal_is_the_error_body_with_its_status() -> None:
    start, body = _run(GUARD, scope(b"evil.com"))
    assert (start["type"], start["status"]) == ("http.response.start", 421)
    assert dict(start["headers"])[b"content-type"] == b"application/json"
    assert json.loads(body["body"])["error"]["code"] == "misdirected_host"


def test_the_settings_are_lists_of_names_checked_at_start() -> None:
    read = settings_from_env(
        {
            "MNEMOLOG_ALLOWED_HOSTS": " Mnemolog.LAN , [fd00::5]:9000,,",
            "MNEMOLOG_ALLOWED_ORIGINS": "https://UI.test",
        }
    )
    assert read.allowed_host_list == ("mnemolog.lan", "[fd00::5]:9000")
    assert read.allowed_origin_list == ("https://ui.test",)
    assert Settings().allowed_host_list == Settings().allowed_origin_list == ()
    for field, bad in [
        ("ALLOWED_HOSTS", "*"),
        ("ALLOWED_HOSTS", "http://mnemolog.lan"),
        ("ALLOWED_HOSTS", "mnemolog.lan."),
        ("ALLOWED_HOSTS", "::1"),
        ("ALLOWED_HOSTS", "me@mnemolog.lan"),
        ("ALLOWED_ORIGINS", "*"),
        ("ALLOWED_ORIGINS", "null"),
        ("ALLOWED_ORIGINS", "https://ui.test/"),
        ("ALLOWED_ORIGINS", "ui.test"),
    ]:
        good = "https://ui.test" if field == "ALLOWED_ORIGINS" else "mnemolog.test"
        with pytest.raises(InvalidInput, match=re.escape(f"(MNEMOLOG_{field}): {bad!r} is not")):
            settings_from_env({f"MNEMOLOG_{field}": f"{good},{bad}"})
