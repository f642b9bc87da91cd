"""Tool-call latency of the MCP server, beside the same operation over REST, in one run.

A ``mnemolog serve`` child process on a fresh data directory is filled with N distinct
synthetic memories (batched ``POST /memories``, as ``recall.py`` does). Then, on that store,
each path makes the same calls, a search (limit 10) and a single-memory add, in blocks of
``--calls`` split into ``--rounds`` blocks, each after a short warm-up, the blocks of every
path taken in turn, so that a drift of the disk's sync latency reaches every path alike:

- ``rest``: ``POST /search`` and ``POST /memories`` with the lean keep-alive client of
  ``keepalive.py``;
- ``mcp-http``: ``search_memories`` and ``add_memory`` through the SDK's client over
  streamable HTTP at ``/mcp``, in the 2026-07-28 revision, and ``mcp-http-2025`` in the
  handshake revision most clients send today;
- ``mcp-http-lean``: the same JSON-RPC calls in a 2025 session, sent with the lean client REST
  uses, not the SDK's: the server's cost of MCP, without the SDK client's;
- ``mcp-stdio-relay``: the same through a ``mnemolog mcp`` child process on the same data dir,
  which relays to the server that owns it.

The server is then stopped, and ``mcp-stdio`` makes the same calls through ``mnemolog mcp``
serving the data dir itself. Latency is as the calling client sees it (p50, p95); the
server's CPU per call (from ``/proc``) separates its share from the client's. Every write adds
a new distinct memory. Nothing is asserted; the issue's goal (MCP over HTTP within 1.5x of
REST) is reported as met or not.

    .venv/bin/python bench/mcp.py [--size 10000] [--calls 400] [--rounds 4] [--tier fast]
                                  [--json]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import random
import shutil
import signal
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import msgspec

# This file is named after the SDK it measures: run as a script, its own directory comes first
# on the path and ``import mcp`` would find it. The SDK is imported with that entry set aside.
_HERE = str(Path(__file__).resolve().parent)
_PATH = list(sys.path)
sys.path[:] = [p for p in sys.path if str(Path(p or ".").resolve()) != _HERE]
from mcp import Client, StdioServerParameters  # noqa: E402

sys.path[:] = _PATH
from keepalive import TransportError  # noqa: E402
from latency import latency_summary  # noqa: E402
from recall import (  # noqa: E402
    MNEMOLOG,
    Server,
    client,
    cpu_seconds,
    ingest,
    memory_texts,
    progress,
    query_text,
    server_env,
)

CONTAINERS = [f"user_{i:02d}" for i in range(8)]
WARMUP = 10
LIMIT = 10
GOAL_RATIO = 1.5
Call = Callable[[str, dict[str, Any]], Awaitable[None]]


class Samples:
    """Per path and operation: every call's latency and the server CPU spent on the calls."""

    def __init__(self) -> None:
        self.seconds: dict[tuple[str, str], list[float]] = {}
        self.server_cpu: dict[tuple[str, str], float] = {}

    def add(self, key: tuple[str, str], latencies: list[float], cpu: float) -> None:
        self.seconds.setdefault(key, []).extend(latencies)
        self.server_cpu[key] = self.server_cpu.get(key, 0.0) + cpu

    def figures(self) -> list[dict[str, Any]]:
        rows = []
        for (path, op), latencies in self.seconds.items():
            summary = latency_summary(latencies)
            rows.append(
                {
                    "path": path,
                    "op": op,
                    "calls": len(latencies),
                    "p50_ms": summary["p50_ms"],
                    "p95_ms": summary["p95_ms"],
                    "server_cpu_ms_each": self.server_cpu[(path, op)] * 1e3 / len(latencies),
                }
            )
        return rows


def arguments(op: str, r: random.Random, texts: Iterator[str]) -> dict[str, Any]:
    tag = r.choice(CONTAINERS)
    if op == "search":
        return {"query": query_text(r), "containerTag": tag, "limit": LIMIT}
    return {"content": next(texts), "containerTag": tag}


async def block(
    samples: Samples, path: str, op: str, call: Call, calls: int, pid: int, seed: int
) -> None:
    """``calls`` timed calls of ``op`` (after a warm-up), and the server CPU they took."""
    r, texts = random.Random(seed), memory_texts(seed)
    tool = "search_memories" if op == "search" else "add_memory"
    for _ in range(WARMUP):
        await call(tool, arguments(op, r, texts))
    latencies = []
    cpu0 = cpu_seconds(pid) if pid else 0.0
    for _ in range(calls):
        args = arguments(op, r, texts)
        t0 = time.perf_counter()
        await call(tool, args)
        latencies.append(time.perf_counter() - t0)
    samples.add((path, op), latencies, (cpu_seconds(pid) - cpu0) if pid else 0.0)


def rest_call(base_url: str) -> tuple[Call, Callable[[], None]]:
    """REST on one keep-alive connection, opened again when the server has closed it while
    the other paths ran (uvicorn closes one idle for 5 s): that costs only a warm-up call."""
    held = [client(base_url)]

    def post(path: str, body: dict[str, Any]) -> Any:
        try:
            return held[0].post(path, json=body)
        except TransportError:
            held[0].close()
            held[0] = client(base_url)
            return held[0].post(path, json=body)

    async def call(tool: str, args: dict[str, Any]) -> None:
        if tool == "search_memories":
            body = {"q": args["query"], "containerTag": args["containerTag"], "limit": LIMIT}
            response = post("/search", body)
        else:
            memory = {"content": args["content"]}
            response = post(
                "/memories", {"containerTag": args["containerTag"], "memories": [memory]}
            )
        if response.status_code != 200:
            raise RuntimeError(f"{tool}: {response.status_code} {response.content[:200]!r}")

    return call, lambda: held[0].close()


class LeanMcp:
    """JSON-RPC over ``/mcp`` on one keep-alive ``http.client`` connection, in a 2025 session."""

    VERSION = "2025-11-25"

    def __init__(self, base_url: str) -> None:
        parts = urllib.parse.urlsplit(base_url)
        self._connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
        self._headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
        self._id = 0
        info = {"name": "bench", "version": "1"}
        params = {"protocolVersion": self.VERSION, "capabilities": {}, "clientInfo": info}
        _, headers = self._send("initialize", params)
        self._headers["mcp-session-id"] = headers["mcp-session-id"]
        self._headers["mcp-protocol-version"] = self.VERSION
        self._send("notifications/initialized", None, notify=True)

    def _send(
        self, method: str, params: Any, *, notify: bool = False
    ) -> tuple[dict[str, Any], dict[str, str]]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if not notify:
            self._id += 1
            message["id"] = self._id
        for attempt in (1, 2):  # reconnect once if the server closed an idle connection
            try:
                self._connection.request(
                    "POST", "/mcp", msgspec.json.encode(message), self._headers
                )
                answer = self._connection.getresponse()
                body = answer.read()
                break
            except (OSError, http.client.HTTPException):
                self._connection.close()
                if attempt == 2:
                    raise
        if answer.status >= 400:
            raise RuntimeError(f"{method}: {answer.status} {body[:200]!r}")
        return (msgspec.json.decode(body) if body else {}), dict(answer.getheaders())

    async def call(self, tool: str, args: dict[str, Any]) -> None:
        reply, _ = self._send("tools/call", {"name": tool, "arguments": args})
        if "error" in reply or reply["result"].get("isError"):
            raise RuntimeError(f"{tool}: {reply}")

    def close(self) -> None:
        self._connection.close()


def mcp_call(session: Client) -> Call:
    async def call(tool: str, args: dict[str, Any]) -> None:
        result = await session.call_tool(tool, args)
        if result.is_error:
            raise RuntimeError(f"{tool}: {result.structured_content}")

    return call


def stdio(data_dir: Path, env: dict[str, str], *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=str(MNEMOLOG), args=["mcp", "--data-dir", str(data_dir), *extra], env=env
    )


async def measure_served(server: Server, env: dict[str, str], calls: int, rounds: int) -> Samples:
    samples = Samples()
    rest, close = rest_call(server.base_url)
    lean = LeanMcp(server.base_url)
    url = f"{server.base_url}/mcp"
    relayed = stdio(server.data_dir, env, "--port", str(server.port))
    try:
        async with (
            Client(url) as modern,
            Client(url, mode="legacy") as handshake,
            Client(relayed) as relay,
        ):
            paths: list[tuple[str, Call]] = [
                ("rest", rest),
                ("mcp-http", mcp_call(modern)),
                ("mcp-http-2025", mcp_call(handshake)),
                ("mcp-http-lean", lean.call),
                ("mcp-stdio-relay", mcp_call(relay)),
            ]
            for round_ in range(rounds):
                for op in ("search", "add"):
                    for n, (path, call) in enumerate(paths):
                        progress(f"  round {round_ + 1}: {path} {op}")
                        seed = 1000 * round_ + 10 * n + (op == "add")
                        await block(samples, path, op, call, calls, server.pid, seed)
    finally:
        close()
        lean.close()
    return samples


async def measure_own(
    data_dir: Path, env: dict[str, str], calls: int, rounds: int, samples: Samples
) -> None:
    async with Client(stdio(data_dir, env)) as own:
        for round_ in range(rounds):
            for op in ("search", "add"):
                progress(f"  round {round_ + 1}: mcp-stdio {op}")
                seed = 5000 + 1000 * round_ + (op == "add")
                await block(samples, "mcp-stdio", op, mcp_call(own), calls, 0, seed)


def judge(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by = {(row["path"], row["op"]): row for row in rows}
    goals = []
    for path in ("mcp-http", "mcp-http-2025", "mcp-http-lean"):
        for op in ("search", "add"):
            ratio = by[(path, op)]["p50_ms"] / by[("rest", op)]["p50_ms"]
            goals.append({"path": path, "op": op, "p50_ratio": ratio, "met": ratio <= GOAL_RATIO})
    return goals


def render(report: dict[str, Any]) -> str:
    env = report["environment"]
    lines = [
        f"mcp: {report['tier']} tier, {report['size']:,} memories in {len(CONTAINERS)} "
        f"containers, {report['calls_each']} calls per path and operation "
        f"({report['rounds']} rounds), {env['cpus']} CPUs, Python {env['python']}",
        f"ingest: {report['ingest']['per_s']:,.0f} memories/s",
        "",
        f"{'path':<18}{'op':<8}{'p50 ms':>9}{'p95 ms':>9}{'x rest p50':>12}{'server CPU ms':>15}",
    ]
    rest = {row["op"]: row["p50_ms"] for row in report["rows"] if row["path"] == "rest"}
    for row in report["rows"]:
        lines.append(
            f"{row['path']:<18}{row['op']:<8}{row['p50_ms']:>9.2f}{row['p95_ms']:>9.2f}"
            f"{row['p50_ms'] / rest[row['op']]:>12.2f}{row['server_cpu_ms_each']:>15.2f}"
        )
    lines += ["", f"goal: MCP over HTTP within {GOAL_RATIO}x of REST (p50)"]
    for g in report["goals"]:
        verdict = "met" if g["met"] else "NOT met"
        lines.append(f"  {g['path']:<16}{g['op']:<8}{g['p50_ratio']:.2f}x  {verdict}")
    lines.append("(mcp-stdio serves the store itself, with the server stopped: no server CPU)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000, help="memories in the store")
    parser.add_argument("--calls", type=int, default=400, help="timed calls per path and operation")
    parser.add_argument("--rounds", type=int, default=4, help="blocks the calls are split into")
    parser.add_argument("--tier", choices=("fast", "quality"), default="fast")
    parser.add_argument("--dir", type=Path, default=Path("."), help="where the store is made")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.size < 1 or args.rounds < 1 or args.calls < args.rounds:
        parser.error("--size and --rounds must be positive, --calls at least --rounds")
    per_block = args.calls // args.rounds
    if not MNEMOLOG.exists():
        parser.error(f"{MNEMOLOG} not found: run from the project's virtualenv")
    env = server_env(args.tier, None)
    workdir = Path(tempfile.mkdtemp(prefix="mnemolog-bench-mcp-", dir=args.dir)).resolve()
    data_dir = workdir / "data"
    started = time.perf_counter()
    server = Server(data_dir, env, workdir / "server.log")
    try:
        server.start()
        progress(f"server up (pid {server.pid}); ingesting {args.size:,}")
        filled = ingest(server.base_url, CONTAINERS, args.size, 500, args.size, "mcp")
        samples = anyio.run(measure_served, server, env, per_block, args.rounds)
        server.stop(signal.SIGINT)
        progress("server stopped; mnemolog mcp on the store itself")
        anyio.run(measure_own, data_dir, env, per_block, args.rounds, samples)
    finally:
        server.kill()
        shutil.rmtree(workdir, ignore_errors=True)
    rows = samples.figures()
    report = {
        "benchmark": "mcp",
        "tier": args.tier,
        "size": args.size,
        "calls_each": per_block * args.rounds,
        "rounds": args.rounds,
        "ingest": filled,
        "rows": rows,
        "goals": judge(rows),
        "total_seconds": time.perf_counter() - started,
        "environment": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
