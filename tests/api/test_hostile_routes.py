"""Every route the server answers, under hostile bytes, over one real server: no answer is a
5xx, every refusal of the API carries the JSON error body (a dashboard page may show the error
page instead) and appends nothing, and the server answers a normal request afterwards.

The routes are read from the app itself (the OpenAPI document's, the dashboard's, the
reference's, the static files', the ``/v1`` proxy and passthrough, ``/mcp``), so a new route is
fuzzed without being listed here. Each gets, with each method it takes, a fixed set of
requests written byte for byte on a socket (no client normalises them):

- its path parameters as encoded paths (``%252e%252e``, ``%2e%2e``, ``%3F``, ``%23``, ``%5c``,
  ``;``, ``//``), control bytes and invalid UTF-8;
- each query parameter it takes given those values, and parameters named with them;
- header values with control bytes and invalid UTF-8, in each header a layer reads;
- bodies nested 127, 128, 129 and 1,100 levels deep (the parser's limit is 128), and invalid
  UTF-8, escapes of surrogates and control characters in a string value of a valid body.

Run twice: with no key made (every loopback caller is the local agent), then with keys live
(an admin key on every request, and requests with a hostile key or cookie, or none).
"""

from __future__ import annotations

import http.client
import inspect
import json
import logging
import re
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.routing import Mount, Route
from starlette.types import ASGIApp

from mnemolog.api import create_app
from mnemolog.api.query import _query_names
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

from ..mcp.test_door import INITIALIZE
from ..proxy.scripted import MODEL, ScriptedUpstream
from ..servers import app_server

Header = tuple[bytes, bytes]

# --- the hostile inputs ------------------------------------------------------------------

CONTROLS = ["%00", "%01", "%0a", "%0d", "%0d%0a", "%1b", "%7f", "a%00b"]
BAD_UTF8 = ["%ff", "%c3%28", "%ed%a0%80", "%c0%af", "%e2%82", "%f4%90%80%80"]
ENCODED = ["%252e%252e", "%2e%2e", "..", ".", "%2e", "%3F", "a%3Fb=1", "%23", "a%23b", "%5c"]
ENCODED += ["a%5cb", "%5c..%5c", ";", "a;b=c", "%3b", "%2F", "..%2F..%2Fetc", "", "a//b"]
ENCODED.append("x" * 2000)
# A path parameter: each of those, and raw bytes a client library would refuse to send.
SEGMENTS = [*ENCODED, *CONTROLS, *BAD_UTF8, "\xff", "\xc3(", "\x01", "\x7f", "a b"]
# A query parameter's value; then its name.
VALUES = [*CONTROLS, *BAD_UTF8, "%252e%252e", "%2e%2e", "%3F", "%23", "%5c", ";", "a;b", "//"]
VALUES += ["%26x%3D1", "", "-1", "99999999999999999999999", "1e400", "nan", "\xff", "\x01"]
NAMES = ["%00", "%ff", "a%0ab", "%ed%a0%80", ";", "\xff"]
# A header's value (raw bytes on the wire).
HEADER_VALUES = [b"\x00", b"a\x01\x1b\x7f", b"\xff\xfe", b"\xc3\x28\xed\xa0\x80", b"%00%0a%0d"]
# Bytes that stand for a JSON string's content in a valid body, then for the whole value.
IN_STRING = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xc0\xaf", b"\xe2\x82", b"\xf4\x90\x80\x80"]
IN_STRING += [b"\\ud800", b"\\udfff\\ud800", b"\\u0000", b"\\u001b", b"\x00", b"\x01", b"\x1b"]
DEPTHS = [127, 128, 129, 1100]  # levels of the whole body: the parser takes 128
WHOLE_BODIES = [b"", b"\xff\xfe", b'{"a": "\xff"}', b'{"a": ', b"null"]

PLACE = b'"@"'  # where a hostile value goes in a valid body
MCP_ACCEPT = (b"accept", b"application/json, text/event-stream")
JSON = b"application/json"
FORM = b"application/x-www-form-urlencoded"
UVICORN_REFUSAL = b"Invalid HTTP request received."  # the HTTP parser's, before any app
COOKIE = b"mnemolog_session="


# --- the routes --------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """One method of one route: its path as declared (``{name}`` per parameter), the query
    parameters it takes, and how it reads a body."""

    method: str
    path: str
    query: tuple[str, ...] = ()
    body: str = "json"  # "json", "form" (a dashboard form), "mcp" or "none"

    @property
    def params(self) -> list[str]:
        return re.findall(r"{(\w+)}", self.path)

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


def framework(app: ASGIApp) -> FastAPI:
    """The FastAPI app inside the layers ``create_app`` puts in front of it."""
    inner: object = app
    while not isinstance(inner, FastAPI):
        found = getattr(inner, "app", None) or getattr(inner, "_app", None)
        if found is None:  # a function answering /mcp in front of the app it closes over
            found = inspect.getclosurevars(inner).nonlocals["app"]  # type: ignore[arg-type]
        inner = found
    return inner


def endpoints(app: ASGIApp) -> list[Endpoint]:
    """Every route the server answers, with each of its methods."""
    found = [Endpoint(m, "/mcp", body="mcp") for m in ("GET", "POST", "DELETE")]
    for context in iter_route_contexts(framework(app).routes):
        route = context.original_route
        if isinstance(route, Mount):  # static files
            found.append(Endpoint("GET", f"{route.path}/{{file}}", body="none"))
            continue
        assert isinstance(route, APIRoute | Route), route
        query = tuple(sorted(_query_names(route.dependant))) if isinstance(route, APIRoute) else ()
        path = re.sub(r"{(\w+):\w+}", r"{\1}", route.path)  # {path:path} as {path}
        for method in sorted((route.methods or set()) - {"HEAD"}):
            kind = "none" if method == "GET" else "json"
            if path.startswith("/ui"):
                kind = "form" if method == "POST" else "none"
            found.append(Endpoint(method, path, query, kind))
    return found


# A valid body of each route that reads one, with ``PLACE`` where a hostile value goes; a
# route not listed reads none (it still gets the whole bodies).
TEMPLATES: dict[str, list[bytes]] = {
    "POST /memories": [
        b'{"containerTag": "fuzz", "memories": [{"content": "@"}]}',
        b'{"containerTag": "fuzz", "memories": [{"content": "c", "metadata": {"k": "@"}}]}',
    ],
    "PATCH /memories/{memory_id}": [b'{"content": "@"}'],
    "POST /memories/{memory_id}/forget": [b'{"reason": "@"}'],
    "POST /memories/{memory_id}/split": [b'{"versionId": "@"}'],
    "POST /documents": [b'{"containerTag": "fuzz", "content": "@"}'],
    "PUT /profile": [b'{"containerTag": "fuzz", "static": ["@"]}'],
    "POST /recalls/{trace_id}/used": [b'{"versionIds": ["@"]}'],
    "POST /recalls/{trace_id}/feedback": [b'{"versionId": "@", "grade": 1}'],
    "POST /search": [b'{"q": "@", "containerTag": "fuzz"}'],
    "POST /import": [],  # the container's export, read at start
    "POST /agents/{agent_id}/quarantine": [b'{"reason": "@"}'],
    "POST /agents/{agent_id}/keys": [b'{"containers": ["@"]}'],
    "POST /agents/{agent_id}/rollback": [b'{"since": "@"}'],
    "POST /ranker/train": [b'{"containerTag": "@"}'],
    "POST /v1/chat/completions": [
        b'{"model": "%s", "messages": [{"role": "user", "content": "@"}]}' % MODEL.encode(),
        b'{"model": "%s", "messages": [{"role": "user", "content": "hi"}], "tools": '
        b'[{"type": "function", "function": {"name": "f", "parameters": {"p": "@"}}}]}'
        % MODEL.encode(),
    ],
    "POST /mcp": [
        b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": '
        b'"search_memories", "arguments": {"query": "@", "containerTag": "fuzz"}}}',
        b'{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": '
        b'"add_memory", "arguments": {"content": "c", "containerTag": "fuzz", "metadata": "@"}}}',
    ],
    **{
        f"{method} /v1/{{path}}": [b'{"model": "m", "input": "@"}']
        for method in ("POST", "PUT", "PATCH", "DELETE")
    },
}
FORM_TEMPLATES: dict[str, bytes] = {
    "POST /ui/login": b"key=@",
    "POST /ui/memories/{memory_id}/correct": b"content=@&expectedVersion=1",
    "POST /ui/memories/{memory_id}/erase": b"confirm=@",
    "POST /ui/traces/{trace_id}/feedback": b"versionId=@&grade=1",
    "POST /ui/agents/{agent_id}/rollback": b"sinceSeq=@",
}
DEFAULT_FORM = b"reason=@"


# --- the server --------------------------------------------------------------------------


@dataclass
class Served:
    base_url: str
    port: int
    app: ASGIApp
    runtime: Runtime
    upstream: ScriptedUpstream
    values: dict[str, str]  # a valid value of each path parameter
    victims: dict[str, str]  # the one a destructive route is given instead
    csrf: str
    mcp_sessions: tuple[str, str]  # the one every request names, and the one DELETE ends
    imported: bytes  # a valid POST /import body
    auth: list[Header] = field(default_factory=list)  # sent with every request

    def head(self) -> int:
        self.runtime.core.recall.settle()  # a recall's event may land after its answer
        return self.runtime.log.head().seq


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    upstream = ScriptedUpstream()
    data_dir = tmp_path_factory.mktemp("hostile-routes") / "data"
    with app_server(upstream.app) as upstream_url:
        settings = Settings(
            data_dir=data_dir, embedder="quality", upstream_base_url=f"{upstream_url}/v1"
        )
        runtime = Runtime(settings)
        try:
            app = create_app(runtime)
            with app_server(app) as url, httpx.Client(base_url=url, timeout=60) as client:
                yield _seeded(client, url, app, runtime, upstream)
        finally:
            runtime.close()


def mcp_session(client: httpx.Client, headers: dict[str, str] | None = None) -> str:
    """A new MCP session of the 2025 handshake: its id."""
    headers = {**(headers or {}), MCP_ACCEPT[0].decode(): MCP_ACCEPT[1].decode()}
    started = client.post("/mcp", headers=headers, json=INITIALIZE)
    session: str = started.raise_for_status().headers["mcp-session-id"]
    client.post(
        "/mcp",
        headers={**headers, "mcp-session-id": session},
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
    ).raise_for_status()
    return session


def _seeded(
    client: httpx.Client, url: str, app: ASGIApp, runtime: Runtime, upstream: ScriptedUpstream
) -> Served:
    def write(tag: str, content: str) -> str:
        answer = client.post(
            "/memories", json={"containerTag": tag, "memories": [{"content": content}]}
        )
        memory_id: str = answer.raise_for_status().json()["memories"][0]["id"]
        return memory_id

    def document(content: str) -> str:
        answer = client.post("/documents", json={"containerTag": "fuzz", "content": content})
        document_id: str = answer.raise_for_status().json()["id"]
        return document_id

    memory_id = write("fuzz", "Ada keeps bees on the roof")
    victim_id = write("victim", "The victim's note")
    found = client.post("/search", json={"q": "bees", "containerTag": "fuzz"})
    trace_id = found.raise_for_status().headers["x-mnemolog-trace-id"]
    client.put("/profile", json={"containerTag": "fuzz", "static": ["Ada"]}).raise_for_status()
    exported = client.get("/export", params={"containerTag": "fuzz"}).raise_for_status()
    page = client.get(f"/ui/memories/{memory_id}").raise_for_status().text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf is not None
    values = {
        "memory_id": memory_id,
        "document_id": document("A note on bees and their keepers."),
        "container_tag": "fuzz",
        "trace_id": trace_id,
        "agent_id": "mallory",
        "key_id": "key_nope",
        "rollback_id": "rbk_nope",
        "path": "files",
        "file": "ui.css",
    }
    victims = {
        "memory_id": victim_id,
        "document_id": document("The victim's document."),
        "container_tag": "victim",
    }
    return Served(
        base_url=url,
        port=int(url.rpartition(":")[2]),
        app=app,
        runtime=runtime,
        upstream=upstream,
        values=values,
        victims=victims,
        csrf=csrf.group(1),
        mcp_sessions=(mcp_session(client), mcp_session(client)),
        imported=exported.content.replace(b'"fuzz"', PLACE, 1),
    )


# --- the requests ------------------------------------------------------------------------


@dataclass(frozen=True)
class Probe:
    endpoint: Endpoint
    what: str  # the hostile input, as a failure shows it
    target: bytes
    headers: tuple[Header, ...] = ()
    body: bytes | None = None


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str
    body: bytes


def _destructive(endpoint: Endpoint) -> bool:
    return endpoint.method == "DELETE" or endpoint.path.endswith("/erase")


def _target(served: Served, endpoint: Endpoint, **given: str) -> bytes:
    """The endpoint's path with each parameter valid but those ``given`` (written as is)."""
    values = served.victims if _destructive(endpoint) else {}
    path = endpoint.path
    for name in endpoint.params:
        value = given.get(name, values.get(name, served.values[name]))
        path = path.replace(f"{{{name}}}", value)
    return path.encode("latin-1")


def _templates(served: Served, endpoint: Endpoint) -> list[bytes]:
    if endpoint.body == "form":
        form = FORM_TEMPLATES.get(str(endpoint), DEFAULT_FORM)
        return [b"csrf=%s&%s" % (served.csrf.encode(), form)]
    if str(endpoint) == "POST /import":
        return [served.imported]
    return TEMPLATES.get(str(endpoint), [])


def _valid_body(served: Served, endpoint: Endpoint) -> bytes | None:
    """The body a valid request sends (its placeholder a plain word), or None."""
    found = _templates(served, endpoint)
    return found[0].replace(b"@", b"fuzz") if found else None


def _headers(endpoint: Endpoint, served: Served, body: bytes | None) -> list[Header]:
    headers = [(b"host", b"127.0.0.1:%d" % served.port), *served.auth]
    if endpoint.body == "mcp":
        session = served.mcp_sessions[_destructive(endpoint)]
        headers += [MCP_ACCEPT, (b"mcp-session-id", session.encode())]
    if body is not None:
        kind = FORM if endpoint.body == "form" else JSON
        headers.append((b"content-type", kind))
    return headers


def _probe(
    served: Served,
    endpoint: Endpoint,
    what: str,
    *,
    target: bytes | None = None,
    body: bytes | None = None,
    swap: tuple[Header, ...] = (),
) -> Probe:
    """A request to ``endpoint``, valid but for what is given: its target, its body, or
    headers ``swap`` (a name given replaces the one sent)."""
    if body is None:
        body = _valid_body(served, endpoint)
    headers = [h for h in _headers(endpoint, served, body) if h[0] not in {n for n, _ in swap}]
    return Probe(
        endpoint,
        what,
        _target(served, endpoint) if target is None else target,
        (*headers, *swap),
        body,
    )


def path_probes(served: Served, endpoint: Endpoint) -> Iterator[Probe]:
    for name in endpoint.params:
        for segment in SEGMENTS:
            target = _target(served, endpoint, **{name: segment})
            yield _probe(served, endpoint, f"path {name}={segment!r}", target=target)
    if endpoint.path == "/mcp" or "{" not in endpoint.path:
        # Suffixes that a decoding or normalising router could read as this route.
        for suffix in ("/", "//", "/.", "/..", "%2F", "%00", ";x", "%3Fx", "/%2e%2e/health"):
            target = endpoint.path.encode() + suffix.encode()
            yield _probe(served, endpoint, f"path suffix {suffix!r}", target=target)


def query_probes(served: Served, endpoint: Endpoint) -> Iterator[Probe]:
    base = _target(served, endpoint)
    for name in endpoint.query:
        for value in VALUES:
            target = base + f"?{name}={value}".encode("latin-1")
            yield _probe(served, endpoint, f"query {name}={value!r}", target=target)
    for name in NAMES:
        target = base + f"?{name}=1".encode("latin-1")
        yield _probe(served, endpoint, f"query name {name!r}", target=target)


def _read_headers(endpoint: Endpoint) -> list[bytes]:
    """The headers some layer reads on this route: the door's, the key's and the body's on
    every route, and the route's own."""
    names = [b"host", b"origin", b"authorization", b"cookie", b"content-type", b"user-agent"]
    if endpoint.path == "/v1/chat/completions":
        names += [b"x-mnemolog-container-tag", b"x-bella-container-tag", b"x-mnemolog-capture"]
    elif endpoint.path == "/mcp":
        names += [b"accept", b"mcp-session-id", b"mcp-protocol-version", b"last-event-id"]
    elif endpoint.path == "/events":
        names.append(b"last-event-id")
    elif str(endpoint) == "POST /memories":
        names.append(b"idempotency-key")
    elif endpoint.path.startswith("/v1/"):
        names += [b"accept", b"accept-encoding", b"openai-beta"]
    return names


def header_probes(served: Served, endpoint: Endpoint) -> Iterator[Probe]:
    for name in _read_headers(endpoint):
        for value in HEADER_VALUES:
            swap = ((name, value),)
            yield _probe(served, endpoint, f"header {name.decode()}: {value!r}", swap=swap)
    swap = ((b"content-length", b"1e3"),)  # not a number: the HTTP parser's to refuse
    yield _probe(served, endpoint, "header content-length: 1e3", swap=swap)


def nested(depth: int, array: bool) -> bytes:
    return b"[" * depth + b"1" + b"]" * depth if array else b'{"a":' * depth + b"1" + b"}" * depth


def _depth_at(template: bytes, place: int) -> int:
    """How many arrays and objects are open at ``place`` (the templates hold no bracket in a
    string)."""
    before = template[:place]
    return before.count(b"[") + before.count(b"{") - before.count(b"]") - before.count(b"}")


def body_probes(served: Served, endpoint: Endpoint) -> Iterator[Probe]:
    if endpoint.body == "none" and endpoint.method == "GET":
        return
    kind = FORM if endpoint.body == "form" else JSON
    for body in WHOLE_BODIES:
        yield _probe(served, endpoint, f"body {body!r}", body=body)
    for depth in DEPTHS:
        for array in (False, True):
            what = f"body nested {depth} {'arrays' if array else 'objects'}"
            swap = ((b"content-type", JSON),)  # a form route is sent JSON here
            yield _probe(served, endpoint, what, body=nested(depth, array), swap=swap)
    for template in _templates(served, endpoint):
        if kind == FORM:
            yield from _form_probes(served, endpoint, template)
            continue
        place = template.index(PLACE)
        for raw in IN_STRING:
            body = template.replace(b"@", raw, 1)
            yield _probe(served, endpoint, f"string {raw!r} in {template[:60]!r}", body=body)
        for depth in DEPTHS:
            for array in (False, True):
                value = nested(depth - _depth_at(template, place), array)
                body = template.replace(PLACE, value, 1)
                what = f"value nested to {depth} {'arrays' if array else 'objects'}"
                yield _probe(served, endpoint, f"{what} in {template[:60]!r}", body=body)


def _form_probes(served: Served, endpoint: Endpoint, template: bytes) -> Iterator[Probe]:
    raw_values = [b"\xff", b"\xc3\x28", b"\x00", b"\x01", b"\x1b", b"\x7f"]
    for value in [*raw_values, *(v.encode() for v in CONTROLS + BAD_UTF8)]:
        body = template.replace(b"@", value, 1)
        yield _probe(served, endpoint, f"form {body!r}", body=body)
    for name in (b"%ff", b"\xff", b"%00", b"a%0ab"):
        yield _probe(served, endpoint, f"form name {name!r}", body=template + b"&" + name + b"=1")


FAMILIES: list[Callable[[Served, Endpoint], Iterator[Probe]]] = [
    path_probes,
    query_probes,
    header_probes,
    body_probes,
]


def send(served: Served, probe: Probe) -> Answer | None:
    """The probe as written, on a socket of its own; its answer (a stream's body unread), or
    None if the server closed the connection without one."""
    lines = [b"%s %s HTTP/1.1" % (probe.endpoint.method.encode(), probe.target)]
    lines += [name + b": " + value for name, value in probe.headers]
    if probe.body is not None:
        lines.append(b"content-length: %d" % len(probe.body))
    lines.append(b"connection: close")
    request = b"\r\n".join(lines) + b"\r\n\r\n" + (probe.body or b"")
    with socket.create_connection(("127.0.0.1", served.port), timeout=60) as sock:
        sock.sendall(request)
        response = http.client.HTTPResponse(sock, method=probe.endpoint.method)
        try:
            response.begin()
        except (http.client.RemoteDisconnected, ConnectionResetError):
            return None
        content_type = response.getheader("content-type") or ""
        # A stream that stays open (/events, an MCP session's GET) is not read.
        streaming = content_type.startswith("text/event-stream")
        body = b"" if streaming else response.read()
        return Answer(response.status, content_type, body)


# --- the checks --------------------------------------------------------------------------


@dataclass
class Tally:
    sent: int = 0
    refused: int = 0
    by_parser: int = 0  # refused by the HTTP parser, before any app ran
    failures: list[str] = field(default_factory=list)


class ServerErrors(logging.Handler):
    """Every traceback the server logs (an exception out of the app)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(self.format(record))


def check(probe: Probe, answer: Answer | None, relayed: bool) -> str | None:
    """What is wrong with the answer, or None."""
    if answer is None:
        return "no answer"
    if answer.status >= 500:
        return f"{answer.status}: {answer.body[:300]!r}"
    if answer.status < 400 or relayed:
        return None  # accepted, or the upstream's own answer passed back
    if answer.status == 400 and answer.body == UVICORN_REFUSAL:
        return None  # no request the app could read: none of its routes ran
    if probe.target.startswith(b"/ui") and answer.content_type.startswith("text/html"):
        return None if b"<html" in answer.body else "an error page without its page"
    try:
        error = json.loads(answer.body)["error"]
    except (ValueError, KeyError, TypeError):
        return f"{answer.status} without the error body: {answer.body[:300]!r}"
    # The MCP server answers with JSON-RPC's error object, its code a number.
    codes = (str, int) if probe.endpoint.path == "/mcp" else (str,)
    if not isinstance(error, dict) or not isinstance(error.get("code"), codes):
        return f"{answer.status} without an error code: {answer.body[:300]!r}"
    return None


def run(served: Served, probes: list[Probe]) -> Tally:
    tally = Tally()
    errors = ServerErrors()
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(errors)
    try:
        head = served.head()
        for probe in probes:
            upstream_calls = len(served.upstream.received)
            answer = send(served, probe)
            tally.sent += 1
            relayed = len(served.upstream.received) != upstream_calls
            problem = check(probe, answer, relayed)
            after = served.head()
            refused = answer is not None and 400 <= answer.status < 500
            if refused and after != head and problem is None:
                problem = f"refused {answer.status if answer else 0}, yet the log moved"
            if refused:
                tally.refused += 1
                tally.by_parser += answer is not None and answer.body == UVICORN_REFUSAL
            if problem is not None:
                tally.failures.append(f"{probe.endpoint} | {probe.what} -> {problem}")
            head = after
    finally:
        logger.removeHandler(errors)
    tally.failures += [f"server logged: {record[-1500:]}" for record in errors.records]
    return tally


def all_probes(served: Served, skipped: frozenset[str] = frozenset()) -> list[Probe]:
    return [
        probe
        for endpoint in endpoints(served.app)
        if str(endpoint) not in skipped
        for family in FAMILIES
        for probe in family(served, endpoint)
    ]


def still_serving(served: Served) -> None:
    headers = {k.decode(): v.decode() for k, v in served.auth}
    with httpx.Client(base_url=served.base_url, timeout=60, headers=headers) as client:
        assert client.get("/health").json()["ok"] is True
        found = client.post("/search", json={"q": "bees", "containerTag": "fuzz"})
        assert found.status_code == 200, found.text
        memory = client.get(f"/memories/{served.values['memory_id']}")
        assert memory.status_code == 200, memory.text


# --- the tests ---------------------------------------------------------------------------

# A key made here would close the door on every request after it: made in the last test.
KEY_MAKING = "POST /agents/{agent_id}/keys"


def test_every_route_is_fuzzed(served: Served) -> None:
    found = {str(endpoint) for endpoint in endpoints(served.app)}
    with httpx.Client(base_url=served.base_url) as client:
        documented = client.get("/openapi.json").json()["paths"]
    for path, operations in documented.items():
        for method, operation in operations.items():
            assert f"{method.upper()} {path}" in found, (method, path)
            if "requestBody" in operation:
                assert f"{method.upper()} {path}" in TEMPLATES, f"no body for {method} {path}"
    for route in ("GET /ui/memories", "POST /ui/login", "GET /docs", "POST /mcp"):
        assert route in found
    assert "POST /v1/{path}" in found and "GET /ui/static/{file}" in found


def _endpoint(served: Served, method: str, path: str) -> Endpoint:
    return next(e for e in endpoints(served.app) if (e.method, e.path) == (method, path))


def test_a_passthrough_header_that_is_not_ascii_goes_as_sent(served: Served) -> None:
    """It was a 500: httpx encodes a header it is given as text in ASCII."""
    endpoint = _endpoint(served, "POST", "/v1/{path}")
    for name in (b"content-type", b"accept", b"openai-beta"):
        swap = ((name, b"\xff\xfe"),)
        answer = send(served, _probe(served, endpoint, name.decode(), swap=swap))
        assert answer is not None and answer.status == 404, answer  # the upstream's own
        assert served.upstream.received[-1].headers[name.decode()] == "\xff\xfe"


def test_an_mcp_stream_asked_to_resume_is_a_new_stream(served: Served) -> None:
    """It was a 500: the SDK, with no event kept to replay, returned without answering."""
    endpoint = _endpoint(served, "GET", "/mcp")
    for value in (b"1", b"\xff\xfe"):
        with httpx.Client(base_url=served.base_url) as client:
            session = mcp_session(client).encode()  # a session has one stream at a time
        swap = ((b"last-event-id", value), (b"mcp-session-id", session))
        answer = send(served, _probe(served, endpoint, "resume", swap=swap))
        assert answer is not None and answer.status == 200, answer
        assert answer.content_type.startswith("text/event-stream")


@pytest.mark.parametrize(
    ("method", "swap", "status", "code"),
    [
        ("POST", (b"content-type", b"text/plain"), 400, "invalid_input"),
        ("POST", (b"content-type", b"\xff"), 400, "invalid_input"),
        ("GET", (b"mcp-protocol-version", b"2026-07-28"), 405, "method_not_allowed"),
        ("DELETE", (b"mcp-protocol-version", b"\xc3("), 405, "method_not_allowed"),
    ],
)
def test_the_mcp_transports_refusals_carry_the_error_body(
    served: Served, method: str, swap: Header, status: int, code: str
) -> None:
    """The SDK answered these in plain text or with no body."""
    before = served.head()
    answer = send(served, _probe(served, _endpoint(served, method, "/mcp"), "", swap=(swap,)))
    assert answer is not None and answer.status == status, answer
    assert answer.content_type == "application/json"
    assert json.loads(answer.body)["error"]["code"] == code
    assert served.head() == before


@pytest.mark.parametrize("path", ["/memories", "/search"])
def test_a_hot_route_refuses_a_query_parameter(served: Served, path: str) -> None:
    """Both were served with it ignored, where every other route refuses one it does not
    take."""
    before = served.head()
    for query in (b"?containerTag=fuzz", b"?%00=1", b"?limit"):
        probe = _probe(served, _endpoint(served, "POST", path), "", target=path.encode() + query)
        answer = send(served, probe)
        assert answer is not None and answer.status == 400, answer
        error = json.loads(answer.body)["error"]
        assert error["code"] == "invalid_input" and "this route takes none" in error["message"]
    assert served.head() == before
    empty = _probe(served, _endpoint(served, "POST", path), "", target=path.encode() + b"?")
    answer = send(served, empty)
    assert answer is not None and answer.status == 200, answer  # an empty query is none


def _report(tally: Tally) -> None:
    print(f"\n{tally.sent} requests, {tally.refused} refused ({tally.by_parser} by the parser)")
    assert tally.failures == [], "\n".join(tally.failures[:60])


@pytest.mark.slow
def test_no_hostile_request_without_keys_is_a_5xx(served: Served) -> None:
    _report(run(served, all_probes(served, skipped=frozenset({KEY_MAKING}))))
    still_serving(served)


@pytest.mark.slow
def test_no_hostile_request_with_keys_live_is_a_5xx(served: Served) -> None:
    with httpx.Client(base_url=served.base_url, timeout=60) as client:
        made = client.post("/agents/fuzz-admin/keys", json={"admin": True})
        token = made.raise_for_status().json()["token"]
        served.auth = [(b"authorization", b"Bearer " + token.encode())]
        bearer = {"authorization": f"Bearer {token}"}
        served.mcp_sessions = (mcp_session(client, bearer), mcp_session(client, bearer))
    try:
        probes = all_probes(served)
        # And with no key, a hostile one, or a hostile session cookie.
        without = replace(served, auth=[])
        for endpoint in endpoints(served.app):
            probes.append(_probe(without, endpoint, "no key"))
            for value in HEADER_VALUES:
                for name, prefix in ((b"authorization", b"Bearer "), (b"cookie", COOKIE)):
                    swap = ((name, prefix + value),)
                    probes.append(_probe(without, endpoint, f"{swap[0]!r}", swap=swap))
        _report(run(served, probes))
        still_serving(served)
    finally:
        served.auth = []
