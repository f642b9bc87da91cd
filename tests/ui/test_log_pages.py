"""The activity feed and the audit page in a real browser: the feed follows the live stream,
and the audit page shows the head, checks the whole log, and exports a signed range."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Browser, expect

from .conftest import Seeded, shot, written

pytestmark = pytest.mark.slow


def test_the_activity_feed_follows_the_log(browser: Browser, open_store: Seeded) -> None:
    page = browser.new_context(base_url=open_store.base_url).new_page()
    page.goto("/ui/activity")
    rows = page.locator("table.activity tbody tr")
    expect(rows.filter(has_text="chain.forgotten").first).to_contain_text(open_store.ids["gone"])
    expect(page.locator("#feed-state")).to_have_attribute("data-state", "live")
    with open_store.client() as client:
        memory_id, seq = written(client, "home", "Alice bought a kayak in June")
    newest = rows.first
    expect(newest).to_have_attribute("data-seq", str(seq))
    expect(newest.locator(".kind")).to_have_text("memory.written")
    expect(newest).to_contain_text(memory_id)
    # Linked as the rows the server rendered are, its instant written the same way.
    expect(newest.get_by_role("link", name=memory_id)).to_have_attribute(
        "href", f"/ui/memories/{memory_id}"
    )
    when = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")
    expect(newest.locator("td").nth(1)).to_have_text(when)
    expect(rows.nth(1).locator("td").nth(1)).to_have_text(when)
    expect(page.get_by_text("Alice bought a kayak")).to_have_count(0)  # the stream: ids only
    shot(page, "activity")


def test_the_audit_page_checks_and_exports_the_log(browser: Browser, open_store: Seeded) -> None:
    page = browser.new_context(base_url=open_store.base_url).new_page()
    with open_store.client() as client:
        head = client.get("/health").json()["log"]["head"]
    page.goto("/ui/audit")
    assert int(page.locator(".head-seq").inner_text()) >= head > 0
    page.get_by_role("button", name="Verify every record now").click()
    expect(page.get_by_role("status")).to_contain_text(re.compile(r"Intact: \d+ records"))
    shot(page, "audit")
    public_key = page.locator(".public-key").inner_text()
    upper = page.get_by_label("To record").input_value()
    with page.expect_download() as downloading:
        page.get_by_role("button", name="Download the signed export").click()
    assert downloading.value.suggested_filename == f"mnemolog-log-1-{upper}-signed.jsonl"
    exported = page.request.get(f"/log/export?from=1&to={upper}&sign=true")
    assert exported.status == 200
    lines = exported.text().splitlines()
    header = json.loads(lines[0])
    assert header["to"] == int(upper) == len(lines) - 1
    assert header["signature"]["publicKey"] == public_key
