"""Real servers on loopback for the tests: the CLI's ``serve`` in a child process, or any ASGI
app under uvicorn in a thread."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import uvicorn

from mnemolog.api.hot import App as ASGIApp

MNEMOLOG = str(Path(sys.executable).parent / "mnemolog")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_healthy(base_url: str, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            httpx.get(f"{base_url}/health", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise TimeoutError(f"{base_url} never answered")


@contextmanager
def mnemolog_server(
    data_dir: Path, env: dict[str, str] | None = None, printed: Path | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``mnemolog serve`` on a free loopback port; yields its base URL and process. What it
    prints (standard output and error) goes to the file ``printed``, if given."""
    port = free_port()
    with contextlib.ExitStack() as files:
        out = subprocess.DEVNULL if printed is None else files.enter_context(printed.open("wb"))
        proc = subprocess.Popen(
            [MNEMOLOG, "serve", "--data-dir", str(data_dir), "--port", str(port)],
            stdout=out,
            stderr=subprocess.DEVNULL if printed is None else subprocess.STDOUT,
            env={**os.environ, "MNEMOLOG_EMBEDDER": "quality", **(env or {})},
        )  # the child holds its own copy of the file
    try:
        base_url = f"http://127.0.0.1:{port}"
        wait_healthy(base_url, proc)
        yield base_url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def app_server(app: ASGIApp) -> Iterator[str]:
    """Serve an app with a real uvicorn on loopback in a thread; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        base_url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        yield base_url
    finally:
        server.should_exit = True
        thread.join(timeout=20)


def raw_request(base_url: str, target: str, host: str | None = None) -> tuple[int, bytes]:
    """A GET with its request line as written, no client library normalising it (a path
    with ``%00``, ``\\`` or ``%0a``): the status and the body of the answer."""
    address = base_url.removeprefix("http://")
    name, _, port = address.rpartition(":")
    request = f"GET {target} HTTP/1.1\r\nHost: {host or address}\r\nConnection: close\r\n\r\n"
    with socket.create_connection((name, int(port)), timeout=30) as sock:
        sock.sendall(request.encode("latin-1"))
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        body = _unchunked(body)
    return int(head.split(b" ", 2)[1]), body


def _unchunked(data: bytes) -> bytes:
    out = b""
    while data:
        size, _, data = data.partition(b"\r\n")
        length = int(size, 16)
        if length == 0:
            break
        out, data = out + data[:length], data[length + 2 :]
    return out


def replayed_traces(data_dir: Path) -> dict[str, object]:
    """``mnemolog replay --check-traces --json`` on a data dir (its server may be running):
    exit 0 means no re-derived trace differs from its record."""
    done = subprocess.run(
        [MNEMOLOG, "replay", "--check-traces", "--json", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "MNEMOLOG_EMBEDDER": "quality"},
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report: dict[str, object] = json.loads(done.stdout)
    return report


def settled_head(client: httpx.Client) -> int:
    """The log head once every recall answered ahead of its commit has landed (``/inspect``
    waits for them), so the head read next moves only for what a test does after."""
    client.get("/inspect", params={"limit": 1})
    head: int = client.get("/health").json()["log"]["head"]
    return head


def add_key(
    data_dir: Path, agent: str, *containers: str, admin: bool = False, embedder: str = "quality"
) -> str:
    """``mnemolog keys add`` on a stopped store: the new key (printed once, never to stderr)."""
    args = [MNEMOLOG, "keys", "add", agent, "--data-dir", str(data_dir)]
    if admin:
        args.append("--admin")
    for tag in containers:
        args += ["--container", tag]
    env = {**os.environ, "MNEMOLOG_EMBEDDER": embedder}
    done = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
    token = done.stdout.strip()
    assert token.startswith("mnl_") and token not in done.stderr
    return token
