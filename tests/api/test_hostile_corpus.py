"""A curated corpus of hostile requests against a real server, on every route that takes
input: each one is refused with a 4xx and the machine-readable error body and appends
nothing to the log; the few a route may accept (query syntax in a search, look-alike names)
are answered without a 5xx."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from mnemolog.api import create_app
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

from ..servers import app_server, settled_head

MAX_BODY = 64 * 1024
JSON = "application/json"


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str  # ``{id}``: a live memory's id
    body: bytes | None = None
    content_type: str | None = JSON
    accepted: bool = False  # a route may take it; then only "no 5xx" is asserted


def j(value: object) -> bytes:
    return json.dumps(value).encode()


def memories(*items: dict[str, object], tag: object = "hostile") -> bytes:
    return j({"containerTag": tag, "memories": list(items)})


def nested(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


CASES = [
    # --- size and shape ------------------------------------------------------------------
    Case("oversized-body", "POST", "/memories", memories({"content": "x" * MAX_BODY})),
    Case("oversized-search", "POST", "/search", j({"q": "y" * (MAX_BODY + 10)})),
    Case("deep-nesting-body", "POST", "/memories", nested(5000)),
    Case("deep-nesting-array", "POST", "/search", b"[" * 5000 + b"]" * 5000),
    Case(
        "deep-nesting-metadata",
        "POST",
        "/memories",
        b'{"containerTag":"h","memories":[{"content":"c","metadata":' + nested(300) + b"}]}",
    ),
    Case("empty-body", "POST", "/memories", b""),
    Case("json-null", "POST", "/memories", b"null"),
    Case("json-array", "POST", "/search", b"[]"),
    Case("json-string", "PUT", "/profile", b'"profile"'),
    Case("trailing-garbage", "POST", "/search", b'{"q": "x"} {"q": "y"}'),
    Case("json-comment", "POST", "/search", b'{"q": "x" /* hi */}'),
    Case("utf8-bom", "POST", "/search", b'\xef\xbb\xbf{"q": "x"}'),
    Case("invalid-utf8", "POST", "/search", b'{"q": "\xff\xfe"}'),
    Case(
        "utf16-body",
        "POST",
        "/search",
        '{"q": "x"}'.encode("utf-16"),
        "application/json; charset=utf-16",
    ),
    Case("no-memories", "POST", "/memories", memories()),
    Case(
        "too-many-memories",
        "POST",
        "/memories",
        memories(*[{"content": f"m{i}"} for i in range(1001)]),
    ),
    Case("content-too-long", "POST", "/memories", memories({"content": "z" * 100_001})),
    Case("empty-content", "POST", "/memories", memories({"content": ""})),
    Case("too-many-facts", "PUT", "/profile", j({"containerTag": "h", "static": ["f"] * 201})),
    # --- wrong types ---------------------------------------------------------------------
    Case("tag-number", "POST", "/memories", memories({"content": "c"}, tag=5)),
    Case("memories-string", "POST", "/memories", j({"containerTag": "h", "memories": "c"})),
    Case("content-list", "POST", "/memories", memories({"content": ["c"]})),
    Case("static-string", "POST", "/memories", memories({"content": "c", "isStatic": "true"})),
    Case("limit-string", "POST", "/search", j({"q": "x", "limit": "10"})),
    Case("rerank-yes", "POST", "/search", j({"q": "x", "rerank": "yes"})),
    Case("mode-unknown", "POST", "/search", j({"q": "x", "searchMode": "all"})),
    Case(
        "metadata-object",
        "POST",
        "/memories",
        memories({"content": "c", "metadata": {"a": {"b": 1}}}),
    ),
    Case("unknown-field", "POST", "/search", j({"q": "x", "drop": "table"})),
    Case("forget-no-reason", "POST", "/memories/{id}/forget", j({})),
    Case(
        "patch-version-zero", "PATCH", "/memories/{id}", j({"content": "c", "expectedVersion": 0})
    ),
    Case(
        "expected-without-supersedes",
        "POST",
        "/memories",
        memories({"content": "c", "expectedVersion": 1}),
    ),
    Case("rollback-seq-string", "POST", "/agents/mallory/rollback", j({"sinceSeq": "1"})),
    Case("quarantine-reason-number", "POST", "/agents/mallory/quarantine", j({"reason": 7})),
    # --- numbers -------------------------------------------------------------------------
    Case("nan", "POST", "/search", b'{"q": "x", "limit": NaN}'),
    Case("infinity", "POST", "/search", b'{"q": "x", "limit": Infinity}'),
    Case("minus-infinity", "POST", "/memories/{id}/split", b'{"versionId": -Infinity}'),
    Case("huge-float", "POST", "/search", b'{"q": "x", "limit": 1e400}'),
    Case(
        "huge-int",
        "POST",
        "/memories",
        memories({"content": "c", "supersedes": "{id}", "expectedVersion": 2**70}),
    ),
    Case("huge-since-seq", "POST", "/agents/mallory/rollback", j({"sinceSeq": 2**70})),
    Case("negative-limit-search", "POST", "/search", j({"q": "x", "limit": -5})),
    Case("zero-limit-search", "POST", "/search", j({"q": "x", "limit": 0})),
    Case("negative-limit-list", "GET", "/memories?limit=-1"),
    Case("negative-offset-list", "GET", "/memories?offset=-1"),
    Case("huge-offset-list", "GET", f"/memories?offset={2**64}"),
    Case("huge-offset-documents", "GET", f"/documents?offset={2**64}"),
    Case("huge-before-inspect", "GET", f"/inspect?before={2**64}"),
    Case("fullwidth-limit", "GET", "/memories?limit=%EF%BC%91%EF%BC%90"),
    Case("limit-float", "GET", "/inspect?limit=1.5"),
    Case("export-from-negative", "GET", "/log/export?from=-1"),
    Case("export-from-word", "GET", "/log/export?from=abc"),
    # --- strings -------------------------------------------------------------------------
    Case(
        "lone-surrogate-content",
        "POST",
        "/memories",
        b'{"containerTag": "h", "memories": [{"content": "a\\ud800b"}]}',
    ),
    Case("lone-surrogate-tag", "POST", "/search", b'{"q": "x", "containerTag": "\\udfff"}'),
    Case(
        "nul-content",
        "POST",
        "/memories",
        b'{"containerTag": "h", "memories": [{"content": "a\\u0000b"}]}',
    ),
    Case("nul-query", "POST", "/search", b'{"q": "x\\u0000"}'),
    Case("nul-reason", "POST", "/memories/{id}/forget", b'{"reason": "\\u0000"}'),
    Case("escape-in-fact", "PUT", "/profile", b'{"containerTag": "h", "static": ["\\u001b[31m"]}'),
    Case(
        "duplicate-keys",
        "POST",
        "/memories",
        b'{"containerTag": "a", "containerTag": "b", "memories": [{"content": "c"}]}',
    ),
    Case(
        "duplicate-nested-keys",
        "POST",
        "/memories",
        b'{"containerTag": "a", "memories": [{"content": "c", "content": "d"}]}',
    ),
    # --- dates ---------------------------------------------------------------------------
    Case("as-of-no-timezone", "POST", "/search", j({"q": "x", "asOf": "2026-07-03T12:00:00"})),
    Case("as-of-month-13", "POST", "/search", j({"q": "x", "asOf": "2026-13-45"})),
    Case("as-of-word", "POST", "/search", j({"q": "x", "asOf": "yesterday"})),
    Case("as-of-empty", "POST", "/search", j({"q": "x", "asOf": ""})),
    Case("as-of-number", "POST", "/search", j({"q": "x", "asOf": 2026})),
    Case("fact-as-of-bad", "POST", "/search", j({"q": "x", "factAsOf": "2026-02-30"})),
    Case(
        "observed-no-timezone",
        "POST",
        "/memories",
        memories({"content": "c", "observedAt": "2026-01-01T00:00:00"}),
    ),
    Case(
        "since-no-timezone", "POST", "/agents/mallory/rollback", j({"since": "2026-07-03T12:00:00"})
    ),
    # --- media types and simple requests -------------------------------------------------
    Case("text-plain", "POST", "/memories", memories({"content": "c"}), "text/plain"),
    Case("form", "POST", "/search", b"q=x&containerTag=h", "application/x-www-form-urlencoded"),
    Case(
        "multipart",
        "POST",
        "/documents",
        b"--b\r\n\r\nx\r\n--b--",
        "multipart/form-data; boundary=b",
    ),
    Case("xml", "PUT", "/profile", b"<profile/>", "application/xml"),
    Case(
        "form-quarantine",
        "POST",
        "/agents/mallory/quarantine",
        b"reason=x",
        "application/x-www-form-urlencoded",
    ),
    # --- ids and names -------------------------------------------------------------------
    Case("traversal-encoded", "GET", "/memories/..%2F..%2Fetc%2Fpasswd"),
    Case("traversal-dots", "GET", "/memories/%2e%2e"),
    Case("traversal-document", "GET", "/documents/..%2Fmemories.sqlite3"),
    Case("traversal-trace", "GET", "/inspect/..%2F..%2Fkeys"),
    Case("nul-id", "GET", "/memories/mem_%00"),
    Case("sql-id", "DELETE", "/memories/'%20OR%20'1'='1"),
    Case("lookalike-id", "GET", "/memories/m%D0%B5m_1"),
    Case("lookalike-agent", "POST", "/agents/m%D0%B0llory/quarantine", b""),
    Case("traversal-agent", "POST", "/agents/..%2Flocal/rollback", j({"sinceSeq": 1})),
    Case("reserved-agent", "POST", "/agents/local/quarantine", b""),
    Case("unknown-rollback", "POST", "/agents/mallory/rollbacks/rbk_nope/undo"),
    Case("split-unknown-version", "POST", "/memories/{id}/split", j({"versionId": "ver_nope"})),
    Case(
        "supersede-unknown",
        "POST",
        "/memories",
        memories({"content": "c", "supersedes": "mem_nope"}),
    ),
    Case("tag-too-long", "GET", "/digest?containerTag=" + "t" * 257),
    # --- accepted: a route may take these, and must not fail on them ----------------------
    *[
        Case(
            f"search-syntax-{i}",
            "POST",
            "/search",
            j({"q": q, "containerTag": "hostile"}),
            accepted=True,
        )
        for i, q in enumerate(
            [
                "title:foo AND (bar",
                '"unclosed phrase',
                "*",
                "foo~2 bar^10",
                '+-!(){}[]^"~*?:\\/',
                "field:[a TO]",
                "content:x OR 1=1",
                "'; DROP TABLE versions; --",
                "NOT",
                "\\",
            ]
        )
    ],
    Case("lookalike-tag", "GET", "/memories?containerTag=h%D0%BEstile", accepted=True),
    Case("sql-tag", "GET", "/memories?containerTag=x'%20OR%201=1%20--", accepted=True),
]


@dataclass
class Server:
    client: httpx.Client
    port: int
    memory_id: str

    def head(self) -> int:
        return settled_head(self.client)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data_dir = tmp_path_factory.mktemp("hostile") / "data"
    runtime = Runtime(Settings(data_dir=data_dir, embedder="quality", max_body_bytes=MAX_BODY))
    try:
        with (
            app_server(create_app(runtime)) as url,
            httpx.Client(base_url=url, timeout=60) as client,
        ):
            written = client.post("/memories", content=memories({"content": "Ada keeps bees"}))
            memory_id = written.json()["memories"][0]["id"]
            yield Server(client, int(url.rpartition(":")[2]), memory_id)
    finally:
        runtime.close()


def send(server: Server, case: Case) -> tuple[int, bytes]:
    """Sent as written, over a raw socket: no client normalises the path or the body."""
    path = case.path.replace("{id}", server.memory_id)
    body = (case.body or b"").replace(b"{id}", server.memory_id.encode())
    head = [f"{case.method} {path} HTTP/1.1".encode(), f"host: 127.0.0.1:{server.port}".encode()]
    if case.body is not None:
        if case.content_type is not None:
            head.append(f"content-type: {case.content_type}".encode())
        head.append(b"content-length: %d" % len(body))
    head.append(b"connection: close")
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        sock.sendall(b"\r\n".join(head) + b"\r\n\r\n" + (body if case.body is not None else b""))
        with sock.makefile("rb") as answer:
            status = int(answer.readline().split()[1])
            length = 0
            while (line := answer.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            return status, answer.read(length)


def test_the_corpus_is_large_and_spans_every_kind() -> None:
    refused = [c for c in CASES if not c.accepted]
    assert len(refused) >= 40
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_is_refused_with_the_error_body_and_appends_nothing(
    server: Server, case: Case
) -> None:
    before = server.head()
    status, body = send(server, case)
    assert status < 500, (case.name, status, body[:300])
    if case.accepted and status < 400:
        return
    assert 400 <= status < 500, (case.name, status, body[:300])
    error = json.loads(body)["error"]
    assert isinstance(error["code"], str) and isinstance(error["message"], str), body[:300]
    assert server.head() == before, case.name


def test_the_served_schema_names_the_bodies_the_routes_read(server: Server) -> None:
    paths = server.client.get("/openapi.json").json()["paths"]
    for path, method in (
        ("/memories", "post"),
        ("/search", "post"),
        ("/memories/{memory_id}", "patch"),
        ("/profile", "put"),
        ("/agents/{agent_id}/rollback", "post"),
    ):
        body = paths[path][method]["requestBody"]["content"]["application/json"]["schema"]
        assert body["$ref"].startswith("#/components/schemas/"), (path, body)
