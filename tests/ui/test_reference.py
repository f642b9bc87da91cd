"""``/docs`` in a real browser: the API reference renders from the package's own files, with
no request to another host."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, expect

from .conftest import Seeded, shot

pytestmark = pytest.mark.slow


def test_the_reference_renders_offline(browser: Browser, open_store: Seeded) -> None:
    page = browser.new_context(base_url=open_store.base_url).new_page()
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto("/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("mnemolog")
    expect(page.get_by_text("/memories/{memory_id}/forget").first).to_be_visible()
    shot(page, "reference")
    own = urlsplit(open_store.base_url).netloc
    assert requested and all(
        url.startswith("data:") or urlsplit(url).netloc == own for url in requested
    ), requested
