"""Added latency of the chat proxy over calling the upstream directly.

Starts the scripted upstream of the tests (``tests/proxy/scripted.py``, OpenAI wire format) and
``mnemolog serve`` in front of it, each in its own process, then times the same turns sent
directly and through the proxy: buffered and streamed, without and with a memory round. A
memory-round turn is two upstream calls (the model asks ``searchMemory``, then answers), so
its direct baseline is those same two calls made back to back by the client; through the
proxy it also includes the recall (embedding, search, the recall event's durable append) and
the turn's own trace append. Prints p50/p95 side by side; asserts nothing.

    .venv/bin/python bench/proxy.py               # 200 turns per case
    .venv/bin/python bench/proxy.py --turns 50 --json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from latency import latency_summary

ROOT = Path(__file__).resolve().parent.parent
MNEMOLOG = str(Path(sys.executable).parent / "mnemolog")
QUESTION = "Which theme do I prefer? Remember it for me."


def serve_upstream(port: int) -> None:
    """The scripted upstream, deciding by the conversation: a question that asks to remember
    gets a ``searchMemory`` call, a conversation ending in a tool result gets an answer."""
    sys.path.insert(0, str(ROOT))
    import uvicorn

    from tests.proxy.scripted import Reply, ScriptedUpstream

    upstream = ScriptedUpstream("openai")

    def decide(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "user" and "Remember" in str(last["content"]) and body.get("tools"):
            return Reply(content=None, calls=[("searchMemory", {"query": "preferred theme"})])
        return Reply(content="You prefer dark mode, as far as I remember it.")

    upstream._next = decide  # type: ignore[method-assign]
    upstream.received = _Discard()  # type: ignore[assignment]
    uvicorn.run(upstream.app, host="127.0.0.1", port=port, log_level="warning")


class _Discard(list[Any]):
    def append(self, item: Any) -> None:  # keep no request bodies during a long run
        pass


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_up(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url} exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise TimeoutError(url)


@contextmanager
def process(args: list[str], url: str, env: dict[str, str] | None = None) -> Iterator[None]:
    proc = subprocess.Popen(
        args,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_up(url, proc)
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def chat(
    client: httpx.Client, base: str, messages: list[dict[str, Any]], *, stream: bool, tools: bool
) -> dict[str, Any]:
    """One call; returns the assistant message (streamed answers are read to the end)."""
    body: dict[str, Any] = {"model": "m", "messages": messages, "stream": stream}
    if tools:
        body["tools"] = [SEARCH_TOOL]
    if not stream:
        response = client.post(f"{base}/chat/completions", json=body)
        response.raise_for_status()
        message: dict[str, Any] = response.json()["choices"][0]["message"]
        return message
    calls: list[dict[str, Any]] = []
    content = []
    with client.stream("POST", f"{base}/chat/completions", json=body) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                content.append(delta.get("content") or "")
                calls += delta.get("tool_calls") or []
    return {"content": "".join(content), "tool_calls": calls}


SEARCH_TOOL = {
    "type": "function",
    "function": {"name": "searchMemory", "parameters": {"type": "object", "properties": {}}},
}


def direct_turn(client: httpx.Client, upstream: str, *, stream: bool, memory: bool) -> None:
    """What the client would pay without the proxy: the same upstream calls."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": QUESTION if memory else "Which theme do I prefer?"}
    ]
    first = chat(client, upstream, messages, stream=stream, tools=memory)
    if memory:
        call = {
            "id": "call_1",
            "type": "function",
            "function": {"name": "searchMemory", "arguments": '{"query": "preferred theme"}'},
        }
        assert first.get("tool_calls"), first
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {
                "role": "tool",
                "tool_call_id": "call_1",
                "content": "1. [2026-11-29] I prefer dark mode.",
            },
        ]
        chat(client, upstream, messages, stream=stream, tools=False)


def proxied_turn(client: httpx.Client, proxy: str, *, stream: bool, memory: bool) -> None:
    content = QUESTION if memory else "Which theme do I prefer?"
    answer = chat(client, proxy, [{"role": "user", "content": content}], stream=stream, tools=False)
    assert "dark mode" in str(answer.get("content")), answer


def timed(turn: Callable[[], None], turns: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        turn()
    samples = []
    for _ in range(turns):
        started = time.perf_counter()
        turn()
        samples.append(time.perf_counter() - started)
    return samples


def compare(
    direct: Callable[[], None], proxied: Callable[[], None], args: argparse.Namespace
) -> dict[str, Any]:
    d = latency_summary(timed(direct, args.turns, args.warmup))
    p = latency_summary(timed(proxied, args.turns, args.warmup))
    return {
        "direct": d,
        "proxy": p,
        "added_p50_ms": (p["p50_ms"] or 0) - (d["p50_ms"] or 0),
        "added_p95_ms": (p["p95_ms"] or 0) - (d["p95_ms"] or 0),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200, help="timed turns per case")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--memories", type=int, default=500, help="memories in the container")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--serve-upstream", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_upstream:
        serve_upstream(args.serve_upstream)
        return 0
    up_port, proxy_port = free_port(), free_port()
    upstream = f"http://127.0.0.1:{up_port}/v1"
    proxy = f"http://127.0.0.1:{proxy_port}"
    results: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        process([sys.executable, __file__, "--serve-upstream", str(up_port)], f"{upstream}/models"),
        process(
            [MNEMOLOG, "serve", "--data-dir", f"{tmp}/data", "--port", str(proxy_port)],
            f"{proxy}/health",
            env={"MNEMOLOG_UPSTREAM_BASE_URL": upstream, "MNEMOLOG_PROXY_CONTAINER_TAG": "bench"},
        ),
        httpx.Client(timeout=60) as client,
    ):
        facts = ["I prefer dark mode."] + [
            f"Fact number {n}: I once visited city {n} and liked its museum."
            for n in range(args.memories - 1)
        ]
        for n in range(0, len(facts), 100):
            client.post(
                f"{proxy}/memories",
                json={
                    "containerTag": "bench",
                    "memories": [{"content": f} for f in facts[n : n + 100]],
                },
            ).raise_for_status()
        for memory in (False, True):
            for stream in (False, True):
                kind = "streamed" if stream else "buffered"
                case = f"{kind}, {'memory round' if memory else 'no memory round'}"
                results[case] = compare(
                    lambda s=stream, m=memory: direct_turn(client, upstream, stream=s, memory=m),
                    lambda s=stream, m=memory: proxied_turn(
                        client, f"{proxy}/v1", stream=s, memory=m
                    ),
                    args,
                )
    if args.json:
        print(
            json.dumps(
                {
                    "machine": platform.platform(),
                    "cpus": os.cpu_count(),
                    "turns": args.turns,
                    "cases": results,
                },
                indent=2,
            )
        )
        return 0
    print(f"{args.turns} turns per case, {args.memories} memories, {os.cpu_count()} cpus; ms")
    columns = ("direct p50", "proxy p50", "added p50", "direct p95", "proxy p95", "added p95")
    print(f"{'case':<28}" + "".join(f"{c:>11}" for c in columns))
    for case, r in results.items():
        row = (
            r["direct"]["p50_ms"],
            r["proxy"]["p50_ms"],
            r["added_p50_ms"],
            r["direct"]["p95_ms"],
            r["proxy"]["p95_ms"],
            r["added_p95_ms"],
        )
        print(f"{case:<28}" + "".join(f"{v:>11.2f}" for v in row))
    print("goal: added p50 <= 15 ms without a memory round, <= 30 ms with one (recall included)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
