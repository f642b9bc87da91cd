"""A real server on loopback whose runtime the tests can look into, and an SSE reader."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from mnemolog.api import create_app
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

from ..servers import app_server


@contextmanager
def audit_server(data_dir: Path, **settings: object) -> Iterator[tuple[httpx.Client, Runtime]]:
    """The app under uvicorn in a thread (closed by its lifespan) and a client for it."""
    runtime = Runtime(Settings(data_dir=data_dir, embedder="quality", **settings))
    with (
        app_server(create_app(runtime)) as base_url,
        httpx.Client(base_url=base_url, timeout=30) as client,
    ):
        yield client, runtime


def write(client: httpx.Client, tag: str, *contents: str) -> list[dict[str, object]]:
    response = client.post(
        "/memories", json={"containerTag": tag, "memories": [{"content": c} for c in contents]}
    )
    assert response.status_code == 200, response.text
    memories: list[dict[str, object]] = response.json()["memories"]
    return memories


def sse_messages(lines: Iterator[str]) -> Iterator[dict[str, str]]:
    """Parse a text/event-stream: each message as its fields; a comment as ``{":": text}``."""
    message: dict[str, str] = {}
    for line in lines:
        if not line:
            if message:
                yield message
            message = {}
        elif line.startswith(":"):
            yield {":": line[1:].strip()}
        else:
            field, _, value = line.partition(":")
            message[field] = value.removeprefix(" ")
