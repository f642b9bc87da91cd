"""Regenerate the dashboard's screenshots in ``docs/ui/`` (``docs/ui.md`` shows them).

    .venv/bin/python tools/ui_screenshots.py          # needs Debian's chromium

A server is started on a scratch data dir (fast tier) with two keys, the user's admin key and
an agent's scoped to one container, and seeded with a small store through the REST API: a
corrected memory, a forgotten one, recalls, and the agent's writes, one of them forgotten and
restored by the user (its trust moves). The browser logs in with the admin key; each view is
then opened in Chromium by its URL and saved as a PNG of 1280 pixels width.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "ui"
MNEMOLOG = str(Path(sys.executable).parent / "mnemolog")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def seed(client: httpx.Client) -> dict[str, str]:
    def write(container: str, content: str) -> str:
        answer = client.post(
            "/memories", json={"containerTag": container, "memories": [{"content": content}]}
        )
        answer.raise_for_status()
        memory_id: str = answer.json()["memories"][0]["id"]
        return memory_id

    ids = {
        "porto": write("user_123", "Alice lives in Porto near the river"),
        "tea": write("user_123", "Alice drinks green tea every morning"),
        "bike": write("user_123", "Alice rides a blue bicycle to the market"),
        "fish": write("user_123", "Alice once kept a goldfish called Bubbles"),
    }
    write("user_123", "The deploy key rotates every Friday at noon")
    client.patch(
        f"/memories/{ids['bike']}", json={"content": "Alice rides a red bicycle to the market"}
    ).raise_for_status()
    client.post(f"/memories/{ids['fish']}/forget", json={"reason": "outdated"}).raise_for_status()
    found = client.post("/search", json={"q": "where does Alice live", "containerTag": "user_123"})
    found.raise_for_status()
    ids["trace"] = found.json()["traceId"]
    client.get("/inspect", params={"limit": 1})  # settles the recall's trace
    return ids


def add_key(data_dir: Path, agent: str, *args: str) -> str:
    """``mnemolog keys add`` on the stopped store: the new key."""
    done = subprocess.run(
        [MNEMOLOG, "keys", "add", agent, "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "MNEMOLOG_EMBEDDER": "fast"},
    )
    return done.stdout.strip()


def seed_agent(base: str, token: str, admin: httpx.Client) -> dict[str, str]:
    """The agent's writes; the user forgets one and restores it: two signals on its trust."""
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, timeout=30, headers=auth) as agent:
        ids = {}
        for name, text in (("vpn", "The VPN gateway is vpn-3"), ("oncall", "Dana is on call")):
            answer = agent.post(
                "/memories", json={"containerTag": "user_123", "memories": [{"content": text}]}
            )
            answer.raise_for_status()
            ids[name] = answer.json()["memories"][0]["id"]
    admin.post(f"/memories/{ids['vpn']}/forget", json={"reason": "wrong"}).raise_for_status()
    admin.post(f"/memories/{ids['vpn']}/restore").raise_for_status()
    key_id = next(k["keyId"] for k in admin.get("/agents/worker").json()["keys"])
    return {"key": key_id}


def main() -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("needs Debian's chromium: apt-get install chromium")
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        data_dir = Path(scratch) / "data"
        admin_key = add_key(data_dir, "you", "--admin")
        agent_key = add_key(data_dir, "worker", "--container", "user_123")
        server = subprocess.Popen(
            [MNEMOLOG, "serve", "--data-dir", str(data_dir), "--port", str(port)],
            env={**os.environ, "MNEMOLOG_EMBEDDER": "fast"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    httpx.get(f"{base}/health", timeout=1)
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        sys.exit("the server did not start")
                    time.sleep(0.1)
            auth = {"Authorization": f"Bearer {admin_key}"}
            with httpx.Client(base_url=base, timeout=30, headers=auth) as client:
                ids = seed(client)
                ids |= seed_agent(base, agent_key, client)
            views = {
                "memories": "/ui/memories",
                "memory": f"/ui/memories/{ids['bike']}",
                "memory-recalls": f"/ui/memories/{ids['porto']}",
                "erase": f"/ui/memories/{ids['tea']}/erase",
                "traces": "/ui/traces",
                "trace": f"/ui/traces/{ids['trace']}",
                "ask": "/ui/ask?container=user_123",
                "asof": "/ui/asof?container=user_123&at=3&to=1000000",
                "agent": "/ui/agents/worker",
                "revoke": f"/ui/agents/worker/keys/{ids['key']}/revoke",
                "rollback": "/ui/agents/worker/rollback?sinceSeq=1",
                "activity": "/ui/activity",
                "audit": "/ui/audit",
            }
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=chromium, args=["--no-sandbox", "--disable-gpu"]
                )
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.goto(base + "/ui/login")
                page.get_by_label("API key").fill(admin_key)
                page.get_by_role("button", name="Log in").click()
                page.wait_for_url(f"{base}/ui/**")
                for name, url in views.items():
                    page.goto(base + url)
                    page.screenshot(path=str(OUT / f"{name}.png"), full_page=True)
                    print(f"docs/ui/{name}.png  {url}")
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
