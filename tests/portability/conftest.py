"""A real store served by uvicorn on loopback, in this process, on the fast embedder tier."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from mnemolog.api import create_app
from mnemolog.runtime import Runtime
from mnemolog.settings_env import settings_from_env

from ..servers import app_server


@dataclass
class Store:
    runtime: Runtime
    client: httpx.Client

    def write(self, tag: str, *contents: str, **extra: object) -> list[dict[str, object]]:
        response = self.client.post(
            "/memories",
            json={"containerTag": tag, "memories": [{"content": c, **extra} for c in contents]},
        )
        assert response.status_code == 200, response.text
        memories: list[dict[str, object]] = response.json()["memories"]
        return memories

    def export(self, **params: str) -> dict[str, object]:
        response = self.client.get("/export", params=params)
        assert response.status_code == 200, response.text
        document: dict[str, object] = response.json()
        return document

    def import_(self, document: object) -> httpx.Response:
        return self.client.post("/import", json=document)


@contextmanager
def open_store(data_dir: Path, **settings_: object) -> Iterator[Store]:
    settings = settings_from_env(os.environ, data_dir=data_dir, embedder="fast", **settings_)
    runtime = Runtime(settings)
    try:
        with (
            app_server(create_app(runtime)) as base_url,
            httpx.Client(base_url=base_url, timeout=60) as client,
        ):
            yield Store(runtime, client)
    finally:
        runtime.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(tmp_path / "a") as opened:
        yield opened


@pytest.fixture
def other(tmp_path: Path) -> Iterator[Store]:
    with open_store(tmp_path / "b") as opened:
        yield opened
