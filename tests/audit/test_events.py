"""GET /events against a real uvicorn server: live, resumable, with heartbeats, content-free,
and a stalled client holds no LMDB read transaction."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mnemolog.audit.stream import RETRY, event_stream
from mnemolog.eventlog import LmdbEventLog
from mnemolog.runtime import Runtime

from ..factories import signal_draft
from ..servers import mnemolog_server
from .conftest import audit_server, sse_messages, write


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Runtime]]:
    data_dir = tmp_path_factory.mktemp("events") / "data"
    with audit_server(data_dir, events_heartbeat_seconds=0.2, stream_chunk_records=2) as opened:
        yield opened


def events(
    client: httpx.Client, *, until_seq: int, headers: dict[str, str] | None = None, **params: int
) -> list[dict[str, str]]:
    """Read messages (not comments) from /events until one with id ``until_seq``."""
    out: list[dict[str, str]] = []
    with client.stream("GET", "/events", params=params, headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for message in sse_messages(response.iter_lines()):
            if "id" in message:
                out.append(message)
                if int(message["id"]) >= until_seq:
                    break
    return out


def head(runtime: Runtime) -> int:
    runtime.core.recall.settle()  # a recall event may land after its answer
    return runtime.log.head().seq


def test_events_arrive_live_with_ids_and_no_content(server: tuple[httpx.Client, Runtime]) -> None:
    client, runtime = server
    start = head(runtime)
    with client.stream("GET", "/events") as response:  # no since: from the head on
        lines = response.iter_lines()
        messages = sse_messages(lines)
        assert next(messages) == {"retry": "2000"}
        written = write(client, "u-live", "Ada keeps a red notebook", "Bo owns a tandem bike")
        found = client.post("/search", json={"q": "notebook colour", "containerTag": "u-live"})
        trace = found.json()["traceId"]
        got: list[dict[str, str]] = []
        for message in messages:
            if "id" in message:
                got.append(message)
            if any(json.loads(m["data"])["kind"] == "recall.performed" for m in got):
                break
    assert [int(m["id"]) for m in got] == list(range(start + 1, start + 4))
    first = json.loads(got[0]["data"])
    assert got[0]["event"] == first["kind"] == "memory.written"
    assert first["seq"] == start + 1 and first["time"].endswith("Z")
    assert first["actor"] == {"agentId": "local", "protocol": "rest"}
    assert first["ids"] == {
        "memoryId": written[0]["id"],
        "versionId": written[0]["versionId"],
        "containerTag": "u-live",
    }
    recall = json.loads(got[2]["data"])
    assert recall["ids"]["recallId"] == trace and recall["ids"]["containerTag"] == "u-live"
    raw = "".join(m["data"] for m in got)
    assert "notebook" not in raw and "tandem" not in raw


def test_resume_with_last_event_id_loses_and_duplicates_nothing(
    server: tuple[httpx.Client, Runtime],
) -> None:
    client, runtime = server
    write(client, "u-resume", *(f"Resume fact number {i} about owls" for i in range(5)))
    first = events(client, since=0, until_seq=4)
    assert [int(m["id"]) for m in first] == [1, 2, 3, 4]
    # Written while the client is away, some in one append, some one by one.
    write(client, "u-resume", *(f"Away fact number {i} about foxes" for i in range(4)))
    for i in range(3):
        write(client, "u-resume", f"Late fact {i} concerning badgers and weasels")
    end = head(runtime)
    # Last-Event-ID wins over since, as a reconnecting EventSource sends both.
    rest = events(client, headers={"last-event-id": first[-1]["id"]}, since=0, until_seq=end)
    seqs = [int(m["id"]) for m in first + rest]
    assert seqs == list(range(1, end + 1))


def test_heartbeats_arrive_while_nothing_happens(server: tuple[httpx.Client, Runtime]) -> None:
    client, runtime = server
    with client.stream("GET", "/events", params={"since": head(runtime)}) as response:
        comments = (m for m in sse_messages(response.iter_lines()) if ":" in m)
        assert next(comments) == {":": "heartbeat"}
        assert next(comments) == {":": "heartbeat"}


def test_since_beyond_the_head_waits_for_that_seq(server: tuple[httpx.Client, Runtime]) -> None:
    client, runtime = server
    since = head(runtime) + 2
    with client.stream("GET", "/events", params={"since": since}) as response:
        messages = sse_messages(response.iter_lines())
        assert next(messages) == {"retry": "2000"}
        assert next(messages) == {":": "heartbeat"}  # nothing yet, though the stream is open
        for i in range(3):
            write(client, "u-wait", f"Waiting fact {i} on the lighthouse keeper")
        first = next(m for m in messages if "id" in m)
    assert int(first["id"]) == since + 1


@pytest.mark.parametrize(
    ("params", "headers", "needle"),
    [
        ({"since": "abc"}, {}, "since must be a sequence number"),
        ({"since": "-1"}, {}, "since must be a sequence number"),
        ({"since": "1.5"}, {}, "since must be a sequence number"),
        ({"since": "1" * 30}, {}, "since must be a sequence number"),
        ({}, {"last-event-id": "seven"}, "Last-Event-ID must be a sequence number"),
        ({"since": "3"}, {"last-event-id": "-4"}, "Last-Event-ID must be a sequence number"),
    ],
)
def test_bad_positions_are_a_400_with_the_error_shape(
    server: tuple[httpx.Client, Runtime],
    params: dict[str, str],
    headers: dict[str, str],
    needle: str,
) -> None:
    client, _ = server
    response = client.get("/events", params=params, headers=headers)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_input" and needle in error["message"]


def _active_readers(log: LmdbEventLog) -> list[str]:
    # LMDB's reader table: one row per slot, txnid "-" when the slot holds no transaction.
    table = str(log._env.readers())
    return [row for row in table.splitlines()[1:] if not row.rstrip().endswith(" -")]


def test_a_stalled_export_client_holds_no_read_transaction(
    server: tuple[httpx.Client, Runtime],
) -> None:
    client, runtime = server
    facts = [f"{i} " + "x" * 1990 for i in range(200)]
    for tag in ("u-big-1", "u-big-2", "u-big-3", "u-big-4", "u-big-5", "u-big-6"):
        assert client.put("/profile", json={"containerTag": tag, "static": facts}).is_success
    port = int(str(client.base_url).rsplit(":", 1)[1].rstrip("/"))
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: it sticks
    with sock:
        sock.connect(("127.0.0.1", port))
        host = f"127.0.0.1:{port}".encode()
        sock.sendall(b"GET /log/export HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host)
        received = sock.recv(64)
        assert received.startswith(b"HTTP/1.1 200")
        # The client reads nothing more. Once the socket buffers are full the server's stream
        # waits on the transport: it must do so holding no transaction.
        deadline = time.monotonic() + 30
        while _active_readers(runtime.log) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _active_readers(runtime.log) == []
        # Writes and other readers go on meanwhile.
        write(client, "u-stall", "A fact written while a client stalls")
        assert client.get("/log/export", params={"from": 1, "to": 2}).status_code == 200
        while chunk := sock.recv(1 << 20):
            received += chunk
    # The export was far larger than what the kernel buffers for one connection (at most
    # net.ipv4.tcp_wmem's 4 MiB plus the tiny receive buffer), so the server had to stall.
    assert len(received) > 6 << 20


def test_the_event_stream_reads_in_chunks_and_holds_nothing_open(tmp_path: Path) -> None:
    async def scenario(log: LmdbEventLog) -> list[int]:
        stream = event_stream(log, 0, heartbeat=60, chunk=3)
        assert await anext(stream) == RETRY
        sizes = []
        for _ in range(3):
            data = await anext(stream)  # the stream is now suspended, as with a slow client
            sizes.append(data.count(b"\n\n"))
            assert _active_readers(log) == []
        log.append([signal_draft("later")])
        assert (await anext(stream)).startswith(b"id: 8\nevent: agent.signal\n")
        await stream.aclose()
        return sizes

    with LmdbEventLog(tmp_path / "log") as log:
        log.append([signal_draft(f"s{i}") for i in range(7)])
        assert asyncio.run(scenario(log)) == [3, 3, 1]


def test_sigterm_ends_the_server_despite_an_open_stream(tmp_path: Path) -> None:
    with (
        mnemolog_server(tmp_path / "data") as (base_url, proc),
        httpx.Client(base_url=base_url, timeout=30) as client,
        client.stream("GET", "/events", params={"since": 0}) as response,
    ):
        assert next(response.iter_lines()) == "retry: 2000"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == -signal.SIGTERM


def test_the_events_are_the_logs(server: tuple[httpx.Client, Runtime]) -> None:
    client, runtime = server
    end = head(runtime)
    got = events(client, since=0, until_seq=end)
    kinds = [r.record.kind for r in runtime.log.read()][:end]
    assert [m["event"] for m in got] == kinds
    assert all(re.fullmatch(r"[a-z]+\.[a-z]+", m["event"]) for m in got)
