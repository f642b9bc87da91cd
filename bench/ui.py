"""The dashboard's speed in a real browser, and what an open dashboard costs the writes.

For each store size, a ``mnemolog serve`` child process (fast tier) is filled with N synthetic
memories in one container by batched ``POST /memories`` (``recall.py``'s texts), a few recalls
are made, then Chromium (Debian's, through Playwright) loads ``/ui/memories`` and one
``/ui/traces/{id}`` ``--loads`` times each: the time to first contentful paint is read from
the page's own ``performance`` entries (p50, p95). Last, single-memory writes are timed over
HTTP for ``--seconds`` with no browser open, then again while a page follows the live activity
feed and another reloads ``/ui/memories`` every second: the write latency with and without a
dashboard, in the same run. Nothing is asserted.

    .venv/bin/python bench/ui.py [--sizes 10000,100000] [--loads 20] [--seconds 10] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from keepalive import KeepAlive
from latency import latency_summary
from playwright.sync_api import Page, sync_playwright
from recall import free_port, memory_texts

MNEMOLOG = Path(sys.executable).parent / "mnemolog"
BATCH = 500
CONTAINER = "bench"
# The page's first contentful paint, in ms from the navigation's start (buffered: it may have
# happened before the observer was made).
FIRST_PAINT = """() => new Promise((resolve) => {
  new PerformanceObserver((list) => {
    const entry = list.getEntriesByName("first-contentful-paint")[0];
    if (entry) resolve(entry.startTime);
  }).observe({ type: "paint", buffered: true });
  setTimeout(() => resolve(null), 5000);
})"""


def post(base: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    with KeepAlive(base) as http:
        answer = http.post(path, json=body)
    if answer.status_code != 200:
        raise RuntimeError(f"{path}: {answer.status_code}")
    found: dict[str, Any] = answer.json()
    return found


def fill(base: str, size: int) -> None:
    texts = memory_texts(1)
    with KeepAlive(base) as http:
        for start in range(0, size, BATCH):
            batch = [{"content": next(texts)} for _ in range(min(BATCH, size - start))]
            answer = http.post("/memories", json={"containerTag": CONTAINER, "memories": batch})
            if answer.status_code != 200:
                raise RuntimeError(f"ingest: {answer.status_code}")


def paint_ms(page: Page, url: str, loads: int) -> dict[str, float]:
    times: list[float] = []
    for _ in range(loads):
        page.goto(url, wait_until="load")
        took = page.evaluate(FIRST_PAINT)
        if took is None:
            raise RuntimeError(f"{url}: the browser reported no first contentful paint")
        times.append(float(took))
    ordered = sorted(times)
    return {
        "p50_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 1),
        "loads": loads,
    }


def write_latency(base: str, seconds: float) -> dict[str, Any]:
    latencies: list[float] = []
    texts = memory_texts(7)
    deadline = time.monotonic() + seconds
    with KeepAlive(base) as http:
        while time.monotonic() < deadline:
            body = {"containerTag": "writes", "memories": [{"content": next(texts)}]}
            started = time.perf_counter()
            answer = http.post("/memories", json=body)
            latencies.append(time.perf_counter() - started)
            if answer.status_code != 200:
                raise RuntimeError(f"write: {answer.status_code}")
    return {**latency_summary(latencies), "writes_per_s": round(len(latencies) / seconds, 1)}


def bench_size(size: int, args: argparse.Namespace, chromium: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [MNEMOLOG, "serve", "--data-dir", f"{scratch}/data", "--port", str(port)],
            env={**os.environ, "MNEMOLOG_EMBEDDER": "fast"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 300
            while True:
                try:
                    with KeepAlive(base) as http:
                        http.get("/health")
                    break
                except OSError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise RuntimeError("the server did not start") from None
                    time.sleep(0.1)
            started = time.monotonic()
            fill(base, size)
            filled = time.monotonic() - started
            trace = post(base, "/search", {"q": "who moved the meeting", "containerTag": CONTAINER})
            with KeepAlive(base) as http:
                http.get("/inspect", params={"limit": 1})  # the recall's trace has landed
            result: dict[str, Any] = {"size": size, "fill_s": round(filled, 1)}
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=chromium, args=["--no-sandbox", "--disable-gpu"]
                )
                page = browser.new_page()
                result["memories_paint"] = paint_ms(page, f"{base}/ui/memories", args.loads)
                result["trace_paint"] = paint_ms(
                    page, f"{base}/ui/traces/{trace['traceId']}", args.loads
                )
                result["writes_alone"] = write_latency(base, args.seconds)
                feed = browser.new_page()
                feed.goto(f"{base}/ui/activity")
                poller = browser.new_page()
                poller.goto(f"{base}/ui/memories")
                # The writes run in a thread; Playwright's pages belong to this one, which
                # reloads the list every second while the feed follows the stream.
                latencies: list[dict[str, Any]] = []
                writer = threading.Thread(
                    target=lambda: latencies.append(write_latency(base, args.seconds))
                )
                deadline = time.monotonic() + args.seconds
                writer.start()
                while time.monotonic() < deadline:
                    poller.reload()
                    feed.wait_for_timeout(1000)
                writer.join()
                result["writes_with_dashboard"] = latencies[0]
                result["feed_rows"] = feed.locator("table.activity tbody tr").count()
                browser.close()
            return result
        finally:
            server.terminate()
            server.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--loads", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--dir", default=None, help="where the scratch data dirs go")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("needs Debian's chromium: apt-get install chromium")
    runs = [bench_size(int(n), args, chromium) for n in args.sizes.split(",")]
    if args.json:
        print(json.dumps(runs, indent=2))
        return
    for run in runs:
        print(f"{run['size']:,} memories in one container (filled in {run['fill_s']} s)")
        for name in ("memories_paint", "trace_paint"):
            figures = run[name]
            print(
                f"  {name:22s} first contentful paint p50 {figures['p50_ms']} ms, "
                f"p95 {figures['p95_ms']} ms over {figures['loads']} loads"
            )
        for name in ("writes_alone", "writes_with_dashboard"):
            w = run[name]
            print(
                f"  {name:22s} single-write p50 {w['p50_ms']:.2f} ms, "
                f"p95 {w['p95_ms']:.2f} ms, {w['writes_per_s']} writes/s"
            )
        print(f"  the live feed showed {run['feed_rows']} rows")


if __name__ == "__main__":
    main()
