"""A proxied turn in the dashboard: the real ``openai`` client through the proxy to a scripted
upstream, then the turn's page in Chromium shows the exact text that was injected, rendered
again from the log and marked as reproduced, byte for byte what the upstream received."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from playwright.sync_api import Browser, expect

from mnemolog.api import create_app
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

from ..proxy.scripted import Reply, ScriptedUpstream
from ..servers import app_server
from .conftest import shot

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def turn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str, str]]:
    """A server after one proxied turn that injected a memory: (base URL, turn id, the tool
    result the upstream received, the memory's id)."""
    upstream = ScriptedUpstream()
    with app_server(upstream.app) as upstream_url:
        data_dir: Path = tmp_path_factory.mktemp("ui-turn") / "data"
        runtime = Runtime(
            Settings(data_dir=data_dir, embedder="fast", upstream_base_url=f"{upstream_url}/v1")
        )
        try:
            with app_server(create_app(runtime)) as base_url:
                written = httpx.post(
                    f"{base_url}/memories",
                    json={"containerTag": "ada", "memories": [{"content": "Ada collects maps"}]},
                )
                written.raise_for_status()
                upstream.script(
                    Reply(content=None, calls=[("searchMemory", {"query": "Ada's hobby"})]),
                    Reply(content="She collects maps."),
                )
                with openai.OpenAI(
                    base_url=f"{base_url}/v1",
                    api_key="k",
                    max_retries=0,
                    default_headers={"x-mnemolog-container-tag": "ada"},
                ) as client:
                    raw = client.chat.completions.with_raw_response.create(
                        model="m", messages=[{"role": "user", "content": "What does Ada do?"}]
                    )
                sent = upstream.chats()[-1].json["messages"]
                tool_result = next(m["content"] for m in sent if m["role"] == "tool")
                memory_id = written.json()["memories"][0]["id"]
                yield base_url, raw.headers["x-mnemolog-trace-id"], tool_result, memory_id
        finally:
            runtime.close()


def test_a_turn_shows_the_exact_text_injected(
    browser: Browser, turn: tuple[str, str, str, str]
) -> None:
    base_url, turn_id, tool_result, _ = turn
    page = browser.new_context(base_url=base_url).new_page()
    page.goto("/ui/traces")
    page.get_by_role("row").filter(has_text="proxied turn").get_by_role("link").click()
    expect(page.get_by_role("heading", name="Proxied turn to m")).to_be_visible()
    assert page.url.endswith(f"/ui/traces/{turn_id}")
    expect(page.locator(".injection .badge.live")).to_contain_text("reproduced")
    shown = page.locator("pre.injected").inner_text()
    assert shown == tool_result  # the bytes the model was sent, rendered again from the log
    expect(page.locator("ol.rounds")).to_contain_text("Ada's hobby")
    shot(page, "turn")
    inspected = httpx.get(f"{base_url}/inspect/{turn_id}").json()
    assert inspected["injections"][0]["text"] == tool_result
    assert json.dumps(inspected).count(tool_result[:20]) >= 1


def test_a_memory_page_lists_the_turn_that_injected_it(
    browser: Browser, turn: tuple[str, str, str, str]
) -> None:
    base_url, turn_id, _, memory_id = turn
    page = browser.new_context(base_url=base_url).new_page()
    page.goto(f"/ui/memories/{memory_id}")
    injected = page.locator("table.injected tbody tr")
    expect(injected).to_have_count(1)
    expect(injected).to_contain_text(turn_id)
    expect(injected.locator("td.agent")).to_have_text("local via the chat proxy proxy")
    # The proxy's memory round is the recall that served it.
    expect(page.locator("table.served tbody tr").first.locator("td.agent")).to_have_text(
        "local via the chat proxy proxy"
    )
    injected.get_by_role("link").click()
    expect(page).to_have_url(re.compile(rf"/ui/traces/{turn_id}$"))
    expect(page.get_by_role("heading", name="Proxied turn to m")).to_be_visible()
