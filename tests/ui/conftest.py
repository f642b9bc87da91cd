"""A real server with a seeded store, and a real Chromium driven by Playwright.

Chromium is Debian's ``chromium`` (``executable_path``): Playwright's own browser download is
never used. Screenshots of what each test saw are kept under ``MNEMOLOG_UI_ARTIFACTS``
(default ``build/ui-artifacts``), so a failure can be looked at afterwards.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from ..servers import add_key, mnemolog_server, settled_head

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("MNEMOLOG_UI_ARTIFACTS", ROOT / "build" / "ui-artifacts"))
ENV = {"MNEMOLOG_EMBEDDER": "fast"}


def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise RuntimeError("the browser tests need Debian's chromium: apt-get install chromium")
    return found


# Per module, not per session: Playwright's sync API holds an event loop in this thread while
# it runs, and a test of another module calling asyncio.run must not find it there.
@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium_path(), args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Seeded:
    """A running server over a seeded store, and what was written into it."""

    base_url: str
    data_dir: Path
    tokens: dict[str, str] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)
    seqs: dict[str, int] = field(default_factory=dict)
    traces: dict[str, str] = field(default_factory=dict)

    def client(self, who: str | None = None) -> httpx.Client:
        headers = {} if who is None else {"Authorization": f"Bearer {self.tokens[who]}"}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=30)


def write(client: httpx.Client, container: str, content: str) -> str:
    return written(client, container, content)[0]


def written(client: httpx.Client, container: str, content: str) -> tuple[str, int]:
    """A memory written: its id and the seq of its event."""
    answer = client.post(
        "/memories", json={"containerTag": container, "memories": [{"content": content}]}
    )
    assert answer.status_code == 200, answer.text
    made = answer.json()["memories"][0]
    return made["id"], made["seq"]


def recall(client: httpx.Client, container: str, query: str) -> str:
    answer = client.post("/search", json={"q": query, "containerTag": container})
    assert answer.status_code == 200, answer.text
    trace_id: str = answer.json()["traceId"]
    return trace_id


def seed(store: Seeded, client: httpx.Client) -> None:
    """Two containers: ``home`` (a correction, a forgotten memory) and ``work``."""
    store.ids["porto"], store.seqs["porto"] = written(
        client, "home", "Alice lives in Porto near the river"
    )
    store.ids["tea"] = write(client, "home", "Alice drinks green tea every morning")
    store.ids["bike"] = write(client, "home", "Alice rides a blue bicycle to the market")
    store.ids["gone"] = write(client, "home", "Alice once kept a goldfish called Bubbles")
    forgot = client.post(f"/memories/{store.ids['gone']}/forget", json={"reason": "outdated"})
    assert forgot.status_code == 200, forgot.text
    store.ids["deploy"] = write(client, "work", "The deploy key rotates every Friday at noon")
    store.ids["standup"] = write(client, "work", "Standup moved to the Aurora room on floor 3")
    store.traces["home"] = recall(client, "home", "where does Alice live")
    store.traces["work"] = recall(client, "work", "when does the deploy key rotate")
    settled_head(client)


@pytest.fixture(scope="module")
def open_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    """A store with no key: every loopback caller is the local agent."""
    data_dir = tmp_path_factory.mktemp("ui-open") / "data"
    with mnemolog_server(data_dir, ENV) as (base_url, _):
        store = Seeded(base_url, data_dir)
        with store.client() as client:
            seed(store, client)
        yield store


@pytest.fixture(scope="module")
def keyed_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    """A store with keys: an admin, and an agent that reaches only ``work``."""
    data_dir = tmp_path_factory.mktemp("ui-keyed") / "data"
    tokens = {
        "admin": add_key(data_dir, "admin", admin=True, embedder="fast"),
        "worker": add_key(data_dir, "worker", "work", embedder="fast"),
        "worker-spare": add_key(data_dir, "worker", "work", embedder="fast"),
    }
    with mnemolog_server(data_dir, ENV) as (base_url, _):
        store = Seeded(base_url, data_dir, tokens=tokens)
        with store.client("admin") as client:
            seed(store, client)
        with store.client("worker") as client:
            store.ids["ticket"], store.seqs["ticket"] = written(
                client, "work", "Ticket OPS-7 waits on the database migration"
            )
            settled_head(client)
        yield store


def shot(page: Page, name: str) -> None:
    """Keep what the page showed, for a person to look at after the run."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
