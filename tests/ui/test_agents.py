"""The agents' pages in a real browser: trust over time, and the user's levers over an agent
(quarantine and release, revoke a key, roll back and undo), each checked against the API."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import httpx
import pytest
from playwright.sync_api import Browser, expect

from .conftest import Seeded, shot
from .test_security import logged_in

pytestmark = pytest.mark.slow


def test_an_admin_quarantines_and_releases_an_agent(browser: Browser, keyed_store: Seeded) -> None:
    page = logged_in(browser, keyed_store, "admin")
    page.goto("/ui/agents")
    row = page.locator("table.agents tbody tr").filter(has_text="worker")
    expect(row).to_contain_text("trusted")
    row.get_by_role("link", name="worker").click()
    expect(page.get_by_role("heading", name="worker")).to_be_visible()
    expect(page.locator("svg.chart, section p").first).to_be_visible()
    page.get_by_label(re.compile("Quarantine")).fill("checking its writes")
    page.get_by_role("button", name="Quarantine").click()
    expect(page.locator(".badge.quarantined")).to_contain_text("checking its writes")
    shot(page, "agent-quarantined")
    page.goto("/ui/memories?container=work&status=quarantined")
    expect(page.get_by_role("link", name=re.compile("Ticket OPS-7"))).to_be_visible()
    page.goto("/ui/memories?container=work&status=live")
    expect(page.get_by_role("link", name=re.compile("Ticket OPS-7"))).to_have_count(0)
    page.goto("/ui/agents/worker")
    page.get_by_role("button", name="Release from quarantine").click()
    expect(page.locator(".badge.live")).to_have_text("trusted")
    page.goto("/ui/memories?container=work&status=live")
    expect(page.get_by_role("link", name=re.compile("Ticket OPS-7"))).to_be_visible()


def test_a_revoked_key_is_refused_at_once(browser: Browser, keyed_store: Seeded) -> None:
    page = logged_in(browser, keyed_store, "admin")
    page.goto("/ui/agents/worker")
    spare = keyed_store.tokens["worker-spare"].split("_")[1]
    row = page.locator("table.keys tbody tr").filter(has_text=spare)

    def spare_opens() -> int:
        with httpx.Client(base_url=keyed_store.base_url) as client:
            return client.get(
                "/memories",
                params={"containerTag": "work"},
                headers={"Authorization": f"Bearer {keyed_store.tokens['worker-spare']}"},
            ).status_code

    # One click asks first: the revocation cannot be undone.
    row.get_by_role("link", name="Revoke…").click()
    expect(page.get_by_role("alert")).to_contain_text("This cannot be undone.")
    # Offline, under the same policy as every page: no script of its own, none inline.
    policy = page.request.get(page.url).headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert "<script>" not in page.content() and not re.search(r"\son[a-z]+=", page.content())
    expect(page.locator("dl.facts")).to_contain_text(spare)
    shot(page, "revoke")
    assert spare_opens() == 200
    page.get_by_role("link", name="Keep it").click()
    expect(row).to_contain_text("live")
    assert spare_opens() == 200
    row.get_by_role("link", name="Revoke…").click()
    page.get_by_role("button", name="Revoke for good").click()
    expect(page.locator("table.keys tbody tr").filter(has_text=spare)).to_contain_text("revoked")
    assert spare_opens() == 401


def test_a_rollback_and_its_undo(browser: Browser, keyed_store: Seeded) -> None:
    page = logged_in(browser, keyed_store, "admin")
    page.goto("/ui/agents/worker")
    page.get_by_label(re.compile("Roll back")).fill(str(keyed_store.seqs["ticket"]))
    page.get_by_role("button", name="Preview the rollback…").click()
    # A preview first: what it will change, and nothing changed yet.
    forgotten = page.locator("ul.forgotten li")
    expect(forgotten).to_have_count(1)
    expect(forgotten).to_contain_text(keyed_store.ids["ticket"])
    expect(forgotten).to_contain_text("Ticket OPS-7 waits on the database migration")
    shot(page, "rollback-preview")
    with keyed_store.client("admin") as admin:
        assert admin.get(f"/memories/{keyed_store.ids['ticket']}").json()["forgotten"] is False
    page.get_by_role("button", name="Roll back").click()
    rollbacks = page.locator("table.rollbacks tbody tr")
    expect(rollbacks).to_have_count(1)
    expect(rollbacks.first).to_contain_text("in force")
    with keyed_store.client("admin") as admin:
        assert admin.get(f"/memories/{keyed_store.ids['ticket']}").json()["forgotten"] is True
    rollbacks.first.get_by_role("button", name="Undo").click()
    expect(page.locator("table.rollbacks tbody tr").first).to_contain_text("undone")
    with keyed_store.client("admin") as admin:
        assert admin.get(f"/memories/{keyed_store.ids['ticket']}").json()["forgotten"] is False


def test_a_scoped_key_sees_only_its_own_agent(browser: Browser, keyed_store: Seeded) -> None:
    page = logged_in(browser, keyed_store, "worker")
    page.goto("/ui/agents")
    expect(page).to_have_url(re.compile(r"/ui/agents/worker$"))
    expect(page.get_by_role("button", name="Quarantine")).to_have_count(0)
    answer = page.goto("/ui/agents/admin")
    assert answer is not None and answer.status == 404
    csrf = page.locator('input[name="csrf"]').first.get_attribute("value") or ""
    refused = page.request.post("/ui/agents/worker/quarantine", form={"csrf": csrf})
    assert refused.status == 403


def test_the_trust_chart_reads_without_hovering(browser: Browser, keyed_store: Seeded) -> None:
    """The chart says what it draws: trust from 0 to 1 on its axis, the threshold by its
    value, the signals' dates under the line and the latest trust beside its point."""
    with keyed_store.client("worker") as worker:
        written = worker.post(
            "/memories",
            json={"containerTag": "work", "memories": [{"content": "The VPN gateway is vpn-3"}]},
        )
        assert written.status_code == 200, written.text
        memory_id = written.json()["memories"][0]["id"]
    with keyed_store.client("admin") as admin:
        assert admin.post(f"/memories/{memory_id}/forget", json={"reason": "wrong"}).is_success
        assert admin.post(f"/memories/{memory_id}/restore").is_success
        signals = admin.get("/agents/worker").json()
    page = logged_in(browser, keyed_store, "admin")
    page.goto("/ui/agents/worker")
    chart = page.locator("svg.chart")
    expect(chart.locator("text.y-tick")).to_have_text(["0.00", "0.25", "0.50", "0.75", "1.00"])
    expect(chart.locator("text.threshold")).to_contain_text("threshold 0.")
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    expect(chart.locator("text.x-tick").last).to_have_text(today)
    expect(chart.locator("text.last")).to_have_text(f"{signals['trust']:.3f}")
    expect(page.locator("p.meta").filter(has_text="oldest on the left")).to_be_visible()
    shot(page, "trust-chart")
