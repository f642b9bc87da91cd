"""Mnemolog nodes on a PostgreSQL log, as real processes, for the tests: how to start one,
run its CLI, and write to it with keyed retries under faults."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

from .postgres import WriterThreads
from .servers import MNEMOLOG, free_port, wait_healthy


def env_for(url: str) -> dict[str, str]:
    return {"MNEMOLOG_EMBEDDER": "fast", "MNEMOLOG_LOG_URL": url}


def mnemolog(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MNEMOLOG, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env_for(url)},
        timeout=300,
    )


class KeyedWriters(WriterThreads):
    """Clients writing one memory per request, each with its own Idempotency-Key, retrying a
    request that failed (connection refused or cut, or a 503) with the same key and body."""

    def __init__(self, base_url: str, count: int = 4, *, prefix: str = "w") -> None:
        super().__init__(count)
        self.base_url = base_url
        self.prefix = prefix
        self.acknowledged: dict[str, dict[str, Any]] = {}

    def _run(self, writer: int) -> None:
        with httpx.Client(base_url=self.base_url, timeout=10) as client:
            n = 0
            while not self._stop.is_set():
                key = f"{self.prefix}{writer}-{n}"
                body = {
                    "containerTag": "team",
                    "memories": [
                        {
                            "content": f"The access code of vault {uuid.uuid4().hex[:10]} is "
                            f"{uuid.uuid4().hex[:10]}."
                        }
                    ],
                }
                deadline = time.monotonic() + 120
                while True:
                    try:
                        answer = client.post(
                            "/memories", json=body, headers={"Idempotency-Key": key}
                        )
                        if answer.status_code == 200:
                            break
                        assert answer.status_code == 503, answer.text
                    except httpx.TransportError:
                        pass
                    self._retried()
                    assert time.monotonic() < deadline, f"{key} never landed"
                    time.sleep(0.1)
                with self._lock:
                    self.acknowledged[key] = answer.json()["memories"][0]
                n += 1


def nth_write(n: int, tag: str, shared_every: int) -> str:
    """What a writer writes the ``n``-th time into ``tag``: every ``shared_every``-th a team rule
    every writer writes at the same time, the others a fact of its own."""
    if n % shared_every == 0:
        return f"Team rule {n}: every deploy needs two reviews from {tag}."
    return f"The access code of vault {uuid.uuid4().hex[:10]} is {n}."


def serve_on(data_dir: Path, port: int, url: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [MNEMOLOG, "serve", "--data-dir", str(data_dir), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **env_for(url)},
    )


@contextmanager
def nodes(root: Path, url: str, count: int) -> Iterator[list[str]]:
    """``count`` nodes on the log at ``url``, each with a data dir of its own under ``root``
    (``node-0``...); yields their base URLs."""
    with ExitStack() as stack:
        urls = []
        for n in range(count):
            port = free_port()
            proc = serve_on(root / f"node-{n}", port, url)

            def stop(proc: subprocess.Popen[bytes] = proc) -> None:
                proc.terminate()
                proc.wait(timeout=30)

            stack.callback(stop)
            urls.append(f"http://127.0.0.1:{port}")
            wait_healthy(urls[-1], proc)
        yield urls


def listed(client: httpx.Client, tag: str, min_seq: int | None = None) -> dict[str, str]:
    """Every memory a node serves in container ``tag`` (id: content), page by page."""
    found: dict[str, str] = {}
    while True:
        params: dict[str, Any] = {"containerTag": tag, "limit": 500, "offset": len(found)}
        if min_seq is not None:
            params["minSeq"] = min_seq
        page = client.get("/memories", params=params)
        assert page.status_code == 200, page.text
        body = page.json()
        found |= {m["id"]: m["content"] for m in body["memories"]}
        if len(found) >= body["total"] or not body["memories"]:
            return found
