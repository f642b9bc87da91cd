"""Where a write and a search spend their time, stage by stage, and a memory its bytes on disk,
at each store size.

    .venv/bin/python bench/profile.py                              # 10k and 100k, fast tier
    .venv/bin/python bench/profile.py --sizes 10000 --writes 200 --json
    .venv/bin/python bench/profile.py --out docs/performance.md    # regenerate the page

One container is filled to each size through the real write path (``WriteCombiner``, batches
of 500, in process), then single writes and searches are timed:

- **in process**, each stage timed by a stopwatch wrapped around the service that does it:
  embedding, the poisoning detector, the neighbours a write is judged against, the exact
  duplicate lookup, the write decision itself (the sameness checks, building the events),
  sealing, the log's append until durable, each projection's apply, the trust check. Stages
  nested in another (sealing inside the decision) are shown apart and marked as such. A
  search's stages are the ones its own trace records (``latency_ms``).
- **over HTTP**, the same data dir served by ``mnemolog serve`` (access log on, as shipped):
  the difference between the HTTP p50 and the in-process p50 is the server, parsing and
  loopback.

Then the bytes each part of the data dir takes on disk (allocated blocks) per memory written.

Medians of per-call sums; the write's total is the p50 of whole calls, so the stages need not
add up to it exactly (the rest is the combiner's hand-offs and the answer).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recall import free_port, memory_texts, query_text

from mnemolog.eventlog import Actor
from mnemolog.memory.recall.messages import RecallRequest
from mnemolog.memory.writing.versions import NewMemory
from mnemolog.runtime import Runtime
from mnemolog.settings_env import settings_from_env

CONTAINER = "profiled"
ACTOR = Actor(agent_id="local", protocol="rest")
FILL_BATCH = 500
MNEMOLOG = str(Path(sys.executable).parent / "mnemolog")


class Stopwatch:
    """Seconds spent in each stage during the current call, and every call's totals."""

    def __init__(self) -> None:
        self.current: dict[str, float] = defaultdict(float)
        self.calls: list[dict[str, float]] = []

    def wrap(self, owner: object, name: str, stage: str) -> None:
        inner = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.current[stage] += time.perf_counter() - started

        setattr(owner, name, timed)

    def note(self, stage: str, seconds: float) -> None:
        self.current[stage] += seconds

    @contextmanager
    def call(self) -> Iterator[None]:
        self.current = defaultdict(float)
        started = time.perf_counter()
        yield
        self.current["total"] = time.perf_counter() - started
        self.calls.append(dict(self.current))

    def medians_ms(self) -> dict[str, float]:
        stages = {stage for call in self.calls for stage in call}
        return {
            stage: round(statistics.median(call.get(stage, 0.0) for call in self.calls) * 1000, 3)
            for stage in sorted(stages)
        }


def instrument(runtime: Runtime, watch: Stopwatch) -> None:
    """Wrap each stage of the write path in the stopwatch (this process only)."""
    core = runtime.core
    writes = core.writes
    watch.wrap(writes._embedder, "embed", "embed")
    watch.wrap(writes._detector, "verdict", "detector")
    watch.wrap(writes._nearest, "nearest_many", "neighbours")
    watch.wrap(writes._memories, "live_duplicates", "duplicate lookup")
    watch.wrap(writes, "_decide", "decision")
    watch.wrap(runtime.sealer, "seal", "sealing (in the decision)")
    if writes._trust is not None:
        watch.wrap(writes._trust, "refuse_distrusted", "trust check")
    for projection in core.runner._projections:
        watch.wrap(projection, "apply", f"apply: {projection.name}")
    log = runtime.log
    submit = log.submit

    def timed_submit(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        future = submit(*args, **kwargs)
        stage = watch.current
        future.add_done_callback(
            lambda _: stage.__setitem__(
                "log append until durable",
                stage.get("log append until durable", 0.0) + time.perf_counter() - started,
            )
        )
        return future

    log.submit = timed_submit  # type: ignore[method-assign]


def fill(runtime: Runtime, texts: Iterator[str], count: int) -> float:
    started = time.perf_counter()
    done = 0
    while done < count:
        n = min(FILL_BATCH, count - done)
        batch = [NewMemory(content=next(texts)) for _ in range(n)]
        runtime.core.combiner.write(CONTAINER, batch, ACTOR)
        done += n
        if done % 10_000 == 0:
            print(f"  filled {done:,}", file=sys.stderr, flush=True)
    return done / (time.perf_counter() - started)


def in_process(
    data_dir: Path, size: int, texts: Iterator[str], writes: int, searches: int
) -> dict[str, Any]:
    env = {**os.environ, "MNEMOLOG_DATA_DIR": str(data_dir), "MNEMOLOG_EMBEDDER": "fast"}
    runtime = Runtime(settings_from_env(env))
    try:
        rate = fill(runtime, texts, size)
        watch = Stopwatch()
        instrument(runtime, watch)
        for _ in range(writes):
            with watch.call():
                runtime.core.combiner.write(CONTAINER, [NewMemory(content=next(texts))], ACTOR)
        r = random.Random(size)
        search_stages: list[dict[str, float]] = []
        totals: list[float] = []
        trace_ids: list[str] = []
        for _ in range(searches):
            request = RecallRequest(q=query_text(r), container_tag=CONTAINER, limit=10)
            started = time.perf_counter()
            # As the REST route asks: the answer does not wait for the trace's commit.
            result = runtime.core.recall.search(request, origin="rest", actor=ACTOR, durable=False)
            totals.append(time.perf_counter() - started)
            trace_ids.append(result.trace_id)
        runtime.core.recall.settle()
        for trace_id in trace_ids:
            trace = runtime.core.traces.get(trace_id)
            assert trace is not None, trace_id
            search_stages.append(dict(trace.latency_ms))
        stages = {
            stage: round(statistics.median(s.get(stage, 0.0) for s in search_stages), 3)
            for stage in sorted({k for s in search_stages for k in s})
        }
        stages["total"] = round(statistics.median(totals) * 1000, 3)
        return {"fill_per_s": round(rate), "write": watch.medians_ms(), "search": stages}
    finally:
        runtime.close()


def over_http(data_dir: Path, texts: Iterator[str], writes: int, searches: int) -> dict[str, Any]:
    port = free_port()
    env = {**os.environ, "MNEMOLOG_EMBEDDER": "fast"}
    server = subprocess.Popen(
        [MNEMOLOG, "serve", "--data-dir", str(data_dir), "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(f"{base}/health", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and server.poll() is None
                time.sleep(0.1)
        with httpx.Client(base_url=base) as client:
            write_ms = []
            for _ in range(writes):
                body = {"containerTag": CONTAINER, "memories": [{"content": next(texts)}]}
                started = time.perf_counter()
                client.post("/memories", json=body).raise_for_status()
                write_ms.append((time.perf_counter() - started) * 1000)
            r = random.Random(1)
            search_ms = []
            for _ in range(searches):
                body2 = {"q": query_text(r), "containerTag": CONTAINER}
                started = time.perf_counter()
                client.post("/search", json=body2).raise_for_status()
                search_ms.append((time.perf_counter() - started) * 1000)
        return {
            "write_p50_ms": round(statistics.median(write_ms), 3),
            "search_p50_ms": round(statistics.median(search_ms), 3),
        }
    finally:
        server.terminate()
        server.wait(timeout=60)


def on_disk(data_dir: Path) -> dict[str, int]:
    """Bytes allocated on disk by each part of a data dir (a projection's files together)."""
    parts: dict[str, int] = defaultdict(int)
    for path in data_dir.rglob("*"):
        if not path.is_file():
            continue
        relative = path.relative_to(data_dir).parts
        if relative[0] == "projections" and len(relative) > 1:
            part = "projections/" + relative[1].split(".")[0]
        else:
            part = relative[0] if len(relative) > 1 else "other"
        parts[part] += path.stat().st_blocks * 512
    return dict(sorted(parts.items()))


def profile(size: int, writes: int, searches: int, workdir: Path) -> dict[str, Any]:
    data_dir = workdir / f"store-{size}"
    texts = memory_texts(seed=size)
    print(f"profiling at {size:,} memories in one container", file=sys.stderr, flush=True)
    found = in_process(data_dir, size, texts, writes, searches)
    found["http"] = over_http(data_dir, texts, writes, searches)
    found["size"] = size
    found["disk"] = on_disk(data_dir)  # after the server stopped: the indexes are saved
    found["memories"] = size + 2 * writes  # filled, then single writes in process and over HTTP
    return found


def machine_reference_ms() -> float:
    """The median time of a fixed pure-Python loop: the same code ran twice as slow on this
    shared machine from one day to the next, so a page says how fast its machine was."""
    times = []
    for _ in range(7):
        started = time.perf_counter()
        sum(i * i for i in range(300_000))
        times.append(time.perf_counter() - started)
    return round(statistics.median(times) * 1000, 2)


def revision() -> str:
    found = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=Path(__file__).resolve().parent,
        capture_output=True,
        text=True,
        check=False,
    )
    return found.stdout.strip() or "unknown"


def page(runs: list[dict[str, Any]], command: str, machine: dict[str, Any]) -> str:
    sizes = [run["size"] for run in runs]
    head = "| stage | " + " | ".join(f"{s:,}" for s in sizes) + " |\n"
    rule = "|---|" + "---:|" * len(sizes) + "\n"

    def rows(kind: str) -> str:
        stages = sorted({k for run in runs for k in run[kind]} - {"total"})
        lines = [
            f"| {stage} | " + " | ".join(f"{run[kind].get(stage, 0.0):.3f}" for run in runs) + " |"
            for stage in stages
        ]
        lines.append(
            "| **total, in process** | "
            + " | ".join(f"**{run[kind]['total']:.3f}**" for run in runs)
            + " |"
        )
        key = f"{kind}_p50_ms"
        lines.append(
            "| **total over HTTP** | "
            + " | ".join(f"**{run['http'][key]:.3f}**" for run in runs)
            + " |"
        )
        lines.append(
            "| HTTP, parsing, the server (the difference) | "
            + " | ".join(f"{run['http'][key] - run[kind]['total']:.3f}" for run in runs)
            + " |"
        )
        return "\n".join(lines) + "\n"

    fill = " / ".join(f"{run['fill_per_s']:,}/s" for run in runs)
    return (
        "# Performance: where a write and a search spend their time\n\n"
        f"Generated by `{command}` (`bench/profile.py`; its docstring says how each stage is"
        " timed). One container filled to each size through the write path, then single writes"
        " and searches timed, p50 in milliseconds, fast tier. Batched fill rate in process:"
        f" {fill}.\n\n"
        f"Code {machine['revision']}. The machine's speed: a fixed pure-Python loop"
        f" (`machine_reference_ms`) took {machine['reference_ms'][0]} ms at the start and"
        f" {machine['reference_ms'][1]} ms at the end (load average"
        f" {machine['load'][0]:.1f} and {machine['load'][1]:.1f}). Compare two pages by it: where"
        " it ran twice as long, every figure is about twice as large for the same code."
        " `bench/instructions.py` counts instructions instead, which the machine does not move.\n\n"
        "## A single write (`POST /memories`, one memory)\n\n"
        + head
        + rule
        + rows("write")
        + "\nThe decision includes the sameness checks of the write against its neighbours;"
        " sealing is inside it. The log's append is measured from submission to durability"
        " (group commit), and overlaps the projections' apply of the previous write.\n\n"
        "## A search (`POST /search`, 10 results)\n\n"
        + head
        + rule
        + rows("search")
        + "\nA search's stages are those its trace records (`GET /inspect/{traceId}`).\n\n"
        "## Bytes on disk per memory\n\n"
        "Allocated bytes of each part of the data dir divided by the memories written, after"
        " the server stopped (indexes saved).\n\n"
        + head.replace("stage", "part")
        + rule
        + disk_rows(runs)
    )


def disk_rows(runs: list[dict[str, Any]]) -> str:
    parts = sorted({part for run in runs for part in run["disk"]})
    lines = [
        f"| {part} | "
        + " | ".join(f"{run['disk'].get(part, 0) / run['memories']:,.0f}" for run in runs)
        + " |"
        for part in parts
    ]
    lines.append(
        "| **total** | "
        + " | ".join(f"**{sum(run['disk'].values()) / run['memories']:,.0f}**" for run in runs)
        + " |"
    )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--dir", type=Path, default=None, help="Where the stores go (a temp dir).")
    parser.add_argument("--out", type=Path, default=None, help="Write the Markdown page here.")
    parser.add_argument("--json", action="store_true", help="Print every figure as JSON.")
    args = parser.parse_args()
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="mnemolog-profile-"))
    reference, load = [machine_reference_ms()], [os.getloadavg()[0]]
    runs = [profile(size, args.writes, args.searches, workdir) for size in args.sizes]
    reference.append(machine_reference_ms())
    load.append(os.getloadavg()[0])
    machine = {"revision": revision(), "reference_ms": reference, "load": load}
    command = "python bench/profile.py " + " ".join(
        ["--sizes", *map(str, args.sizes), "--writes", str(args.writes)]
    )
    if args.out is not None:
        args.out.write_text(page(runs, command, machine))
    if args.json:
        print(json.dumps({"machine": machine, "runs": runs}, indent=2))
    else:
        print(page(runs, command, machine))


if __name__ == "__main__":
    main()
