"""Side by side at each store size, in one run: mnemolog through HTTP, SuperLocalMemory V2 in its
own process, and SQLite FTS5 as the floor, on the same distinct facts in one container.

    .venv/bin/python bench/scale.py                                   # 10k and 100k, 2 rounds
    .venv/bin/python bench/scale.py --sizes 10000 --rounds 2 --peer-src ~/SuperLocalMemoryV2/src \
        --peer-python ~/slm-venv/bin/python --out docs/benchmarks.md
    .venv/bin/python bench/scale.py --sizes 1000000 --rounds 1 --no-floor   # the long run

Each round fills a fresh store of each system to the size, then times, in this order:

- *fill*: the size's facts written (mnemolog: batches of 1,000 per ``POST /memories``; the peer
  has no batch call, so one ``add_memory`` each; the floor: 1,000 rows per transaction);
- *1 writer*: ``--singles`` facts one per request, one after another (every mnemolog write
  durable before its answer; the peer commits to SQLite in WAL mode, the floor too);
- *8 writers*: 8 threads writing ``--per-writer`` facts each, one per request; errors counted;
- *search*: ``--queries`` questions, each naming one stored fact (``bench/factgen.py``), spread
  over the store: p50, p99 and hit@10 (the fact among the 10 served);
- *bytes*: allocated bytes of the store's files per memory, the server stopped; *RSS*: the
  server's peak resident memory; *boot*: a restart on the filled store until it answers.

The systems run in turn within a round (mnemolog, the peer, the floor), so the machine's noise
falls on all of them; ratios are taken within a round, then their median reported. mnemolog is
the fast tier as shipped (access log on), through a real ``mnemolog serve`` on loopback; the
peer is a library (no server) and is timed in its process, which favours it by the HTTP round
trip (about 1 ms here, see docs/performance.md).

The peer's code is not part of this repository: ``--peer-src`` is the ``src`` directory of a
checkout of https://github.com/varun369/SuperLocalMemoryV2 at tag ``v2.8.6``, and
``--peer-python`` an interpreter with its optional dependencies (``pip install scikit-learn
hnswlib``), so that it runs its best configuration. Without them the peer is left out.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from factgen import Fact, distinct_facts
from recall import free_port
from sections import write_section

REPO = Path(__file__).resolve().parent.parent
MNEMOLOG = str(Path(sys.executable).parent / "mnemolog")
CONTAINER = "scale"
FILL_BATCH = 1000
SECTION = "scale.py"
SYSTEMS = ("mnemolog", "SuperLocalMemory V2", "SQLite FTS5 (floor)")
# The figures of the table, in order: (key, heading, format, better when higher).
FIGURES = [
    ("fill_per_s", "fill, memories/s", "{:,.0f}", True),
    ("single_per_s", "1 writer, writes/s", "{:,.0f}", True),
    ("single_p50_ms", "1 writer, p50 ms", "{:.2f}", False),
    ("writers_per_s", "8 writers, writes/s", "{:,.0f}", True),
    ("writers_errors", "8 writers, errors", "{:.0f}", False),
    ("search_p50_ms", "search p50 ms", "{:.2f}", False),
    ("search_p99_ms", "search p99 ms", "{:.2f}", False),
    ("hit_at_10", "hit@10", "{:.3f}", True),
    ("bytes_per_memory", "bytes/memory", "{:,.0f}", False),
    ("rss_mib", "peak RSS, MiB", "{:,.0f}", False),
    ("boot_s", "boot, s", "{:.2f}", False),
    ("rebuild_s", "rebuild, s", "{:,.0f}", False),
]


def progress(message: str) -> None:
    print(f"[scale] {message}", file=sys.stderr, flush=True)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def allocated(path: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


def asked(written: int, queries: int) -> list[int]:
    """The facts asked about: ``queries`` of the ``written``, spread evenly over the store."""
    step = max(1, written // queries)
    return list(range(0, written, step))[:queries]


class Plan:
    """How many facts each phase writes, from one list shared by every system."""

    def __init__(self, size: int, singles: int, writers: int, per_writer: int, queries: int):
        self.size, self.singles, self.writers = size, singles, writers
        self.per_writer, self.queries = per_writer, queries
        self.total = size + singles + writers * per_writer


# --- mnemolog, through HTTP ----------------------------------------------------------------


class Server:
    def __init__(self, data_dir: Path) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [MNEMOLOG, "serve", "--data-dir", str(data_dir), "--port", str(self.port)],
            env={**os.environ, "MNEMOLOG_EMBEDDER": "fast"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        started = time.perf_counter()
        deadline = time.monotonic() + 600
        while True:
            try:
                if httpx.get(f"{self.base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mnemolog serve did not come up (exit {self.proc.poll()})")
            time.sleep(0.02)
        self.boot_s = time.perf_counter() - started

    def peak_rss_mib(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=300)


def parts(data_dir: Path, memories: int) -> dict[str, float]:
    """Allocated bytes per memory of each top folder (and each projection) of a store."""
    found: dict[str, float] = {}
    for top in sorted(data_dir.iterdir()):
        inner = sorted(top.iterdir()) if top.name == "projections" else [top]
        for path in inner:
            size = allocated(path) if path.is_dir() else path.stat().st_blocks * 512
            name = path.relative_to(data_dir).as_posix().split(".")[0]
            found[name] = found.get(name, 0.0) + size / memories
    return found


def rebuild(data_dir: Path) -> float:
    """Seconds ``mnemolog rebuild`` takes on the stopped store: every projection from the log."""
    started = time.perf_counter()
    done = subprocess.run(
        [MNEMOLOG, "rebuild", "--data-dir", str(data_dir)],
        env={**os.environ, "MNEMOLOG_EMBEDDER": "fast"},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"mnemolog rebuild failed: {done.stderr[-2000:]}")
    return time.perf_counter() - started


def run_mnemolog(
    plan: Plan,
    facts: list[Fact],
    workdir: Path,
    *,
    rebuilt: bool = False,
    keep: Path | None = None,
) -> dict[str, float]:
    """The figures of mnemolog at ``plan``; ``rebuilt``: also time a rebuild of the filled store;
    ``keep``: move the store there instead of deleting it."""
    data_dir = workdir / "mnemolog"
    server = Server(data_dir)
    ids: dict[int, str] = {}
    try:
        with httpx.Client(base_url=server.base, timeout=600) as client:

            def write(first: int, count: int, http: httpx.Client = client) -> None:
                body = {
                    "containerTag": CONTAINER,
                    "memories": [{"content": f.text} for f in facts[first : first + count]],
                }
                answer = http.post("/memories", json=body)
                answer.raise_for_status()
                for n, memory in enumerate(answer.json()["memories"], start=first):
                    ids[n] = memory["id"]

            started = time.perf_counter()
            for first in range(0, plan.size, FILL_BATCH):
                write(first, min(FILL_BATCH, plan.size - first))
                if first and first % 100_000 == 0:
                    elapsed = time.perf_counter() - started
                    progress(f"  mnemolog filled {first:,} in {elapsed:,.0f} s")
            fill_s = time.perf_counter() - started
            at = plan.size

            single_ms = []
            started = time.perf_counter()
            for n in range(at, at + plan.singles):
                t = time.perf_counter()
                write(n, 1)
                single_ms.append((time.perf_counter() - t) * 1000)
            singles_s = time.perf_counter() - started
            at += plan.singles

            errors = 0
            lock = threading.Lock()

            def writer(first: int) -> None:
                nonlocal errors
                with httpx.Client(base_url=server.base, timeout=60) as own:
                    for n in range(first, first + plan.per_writer):
                        try:
                            write(n, 1, own)
                        except httpx.HTTPError:
                            with lock:
                                errors += 1

            writers_s = _threads(plan, at, writer)
            at += plan.writers * plan.per_writer

            search_ms, hits = [], 0
            questions = asked(at, plan.queries)
            for n in questions:
                body = {"q": facts[n].question, "containerTag": CONTAINER, "limit": 10}
                t = time.perf_counter()
                found = client.post("/search", json=body)
                search_ms.append((time.perf_counter() - t) * 1000)
                found.raise_for_status()
                hits += ids.get(n) in {r["id"] for r in found.json()["results"]}
        rss = server.peak_rss_mib()
    finally:
        server.stop()
    stored = allocated(data_dir)
    by_part = parts(data_dir, at)
    progress("  bytes/memory by part: " + ", ".join(f"{k} {v:,.0f}" for k, v in by_part.items()))
    again = Server(data_dir)
    again.stop()
    rebuild_s = {"rebuild_s": rebuild(data_dir)} if rebuilt else {}
    if keep is None:
        shutil.rmtree(data_dir)
    else:
        shutil.move(data_dir, keep)
    return {
        **rebuild_s,
        "memories": at,
        "fill_per_s": plan.size / fill_s,
        "single_per_s": plan.singles / singles_s,
        "single_p50_ms": statistics.median(single_ms),
        "writers_per_s": plan.writers * plan.per_writer / writers_s,
        "writers_errors": errors,
        "search_p50_ms": statistics.median(search_ms),
        "search_p99_ms": percentile(search_ms, 0.99),
        "hit_at_10": hits / len(questions),
        "bytes_per_memory": stored / at,
        "rss_mib": rss,
        "boot_s": again.boot_s,
    }


def _threads(plan: Plan, at: int, writer: Callable[[int], None]) -> float:
    threads = [
        threading.Thread(target=writer, args=(at + w * plan.per_writer,))
        for w in range(plan.writers)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


# --- SuperLocalMemory V2, in its own process ---------------------------------------------------


def run_peer(
    plan: Plan, facts_file: Path, workdir: Path, src: Path, python: Path
) -> dict[str, float]:
    peer_dir = workdir / "peer"
    peer_dir.mkdir()
    done = subprocess.run(
        [
            str(python),
            str(Path(__file__).resolve().parent / "peers" / "slm_v2.py"),
            *("--src", str(src), "--dir", str(peer_dir), "--facts", str(facts_file)),
            *("--fill", str(plan.size), "--singles", str(plan.singles)),
            *("--writers", str(plan.writers), "--per-writer", str(plan.per_writer)),
            *("--queries", str(plan.queries)),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    shutil.rmtree(peer_dir)
    if done.returncode != 0:
        raise RuntimeError(f"the peer failed: {done.stderr[-2000:]}")
    found: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


# --- SQLite FTS5, the floor ------------------------------------------------------------------

_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "so",
        "that",
        "the",
        "their",
        "them",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)


def fts_query(question: str) -> str:
    terms = [w for w in re.findall(r"\w+", question.lower()) if w not in _STOP]
    return " OR ".join(f'"{w}"' for w in terms) or '""'


def run_floor(plan: Plan, facts: list[Fact], workdir: Path) -> dict[str, float]:
    """FTS5 with the porter stemmer, stop words dropped from the query, BM25 order; WAL with
    ``synchronous=FULL``, so each commit is durable as mnemolog's are."""
    path = workdir / "floor.sqlite3"

    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(path, timeout=60, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        return conn

    conn = connect()
    conn.execute("CREATE VIRTUAL TABLE facts USING fts5(content, tokenize='porter unicode61')")
    insert = "INSERT INTO facts (rowid, content) VALUES (?, ?)"
    started = time.perf_counter()
    for first in range(0, plan.size, FILL_BATCH):
        rows = [(n, facts[n].text) for n in range(first, min(first + FILL_BATCH, plan.size))]
        with conn:
            conn.executemany(insert, rows)
    fill_s = time.perf_counter() - started
    at = plan.size
    single_ms = []
    started = time.perf_counter()
    for n in range(at, at + plan.singles):
        t = time.perf_counter()
        with conn:
            conn.execute(insert, (n, facts[n].text))
        single_ms.append((time.perf_counter() - t) * 1000)
    singles_s = time.perf_counter() - started
    at += plan.singles
    errors = 0
    lock = threading.Lock()

    def writer(first: int) -> None:
        nonlocal errors
        own = connect()
        for n in range(first, first + plan.per_writer):
            try:
                with own:
                    own.execute(insert, (n, facts[n].text))
            except sqlite3.Error:
                with lock:
                    errors += 1
        own.close()

    writers_s = _threads(plan, at, writer)
    at += plan.writers * plan.per_writer
    search_ms, hits = [], 0
    questions = asked(at, plan.queries)
    for n in questions:
        t = time.perf_counter()
        found = conn.execute(
            "SELECT rowid FROM facts WHERE facts MATCH ? ORDER BY bm25(facts) LIMIT 10",
            (fts_query(facts[n].question),),
        ).fetchall()
        search_ms.append((time.perf_counter() - t) * 1000)
        hits += n in {row[0] for row in found}
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    stored = sum(p.stat().st_blocks * 512 for p in workdir.glob("floor.sqlite3*"))
    for p in workdir.glob("floor.sqlite3*"):
        p.unlink()
    return {
        "memories": at,
        "fill_per_s": plan.size / fill_s,
        "single_per_s": plan.singles / singles_s,
        "single_p50_ms": statistics.median(single_ms),
        "writers_per_s": plan.writers * plan.per_writer / writers_s,
        "writers_errors": errors,
        "search_p50_ms": statistics.median(search_ms),
        "search_p99_ms": percentile(search_ms, 0.99),
        "hit_at_10": hits / len(questions),
        "bytes_per_memory": stored / at,
    }


# --- the report --------------------------------------------------------------------------------


def spread(values: list[float], fmt: str) -> str:
    if not values:
        return "-"
    middle = fmt.format(statistics.median(values))
    if len(values) == 1:
        return middle
    return f"{middle} [{fmt.format(min(values))} to {fmt.format(max(values))}]"


def ratios(rounds: list[dict[str, dict[str, float]]], key: str, higher: bool) -> list[float]:
    """mnemolog against the peer within each round, as "how many times better"."""
    out = []
    for found in rounds:
        ours, peer = found.get(SYSTEMS[0], {}), found.get(SYSTEMS[1], {})
        if key in ours and key in peer and ours[key] and peer[key]:
            out.append(ours[key] / peer[key] if higher else peer[key] / ours[key])
    return out


def table(report: dict[str, Any]) -> str:
    lines = []
    for size, rounds in report["sizes"].items():
        systems = [s for s in SYSTEMS if any(s in r for r in rounds)]
        lines += [
            f"**{int(size):,} memories in one container**, {len(rounds)} round(s): median"
            " [min to max].",
            "",
            "| | " + " | ".join(systems) + " | mnemolog vs the peer |",
            "|---|" + "---:|" * (len(systems) + 1),
        ]
        for key, heading, fmt, higher in FIGURES:
            cells = [
                spread([r[s][key] for r in rounds if key in r.get(s, {})], fmt) for s in systems
            ]
            times = ratios(rounds, key, higher) if key != "writers_errors" else []
            versus = spread(times, "{:.2f}x") if times else ""
            lines.append(f"| {heading} | " + " | ".join(cells) + f" | {versus} |")
        lines.append("")
    lines.append(
        "*mnemolog vs the peer*: how many times better mnemolog is, taken within each round"
        " (above 1: better; for times and bytes, the peer's figure over mnemolog's)."
    )
    return "\n".join(lines) + "\n"


def plot(report: dict[str, Any], directory: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    sizes = sorted(int(s) for s in report["sizes"])
    made = []
    for name, keys, label in (
        (
            "scale_latency.png",
            [("single_p50_ms", "1 writer p50"), ("search_p50_ms", "search p50")],
            "ms",
        ),
        ("scale_bytes.png", [("bytes_per_memory", "bytes per memory")], "bytes"),
    ):
        fig, ax = plt.subplots(figsize=(7, 4))
        for system in SYSTEMS:
            for key, what in keys:
                xs, ys = [], []
                for size in sizes:
                    values = [
                        r[system][key]
                        for r in report["sizes"][str(size)]
                        if key in r.get(system, {})
                    ]
                    if values:
                        xs.append(size)
                        ys.append(statistics.median(values))
                if xs:
                    ax.plot(xs, ys, marker="o", label=f"{system}: {what}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("memories in one container")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(directory / name, dpi=110)
        plt.close(fig)
        made.append(directory / name)
    return made


def section(report: dict[str, Any], plots: list[Path], page: Path) -> str:
    links = "\n".join(
        f"![{p.stem.replace('_', ' ')}]({os.path.relpath(p, page.parent)})" for p in plots
    )
    return (
        "## At scale: mnemolog, SuperLocalMemory V2 and SQLite FTS5 side by side\n\n"
        f"Written by `{report['command']}` on {report['date']} (code {report['code']}), in"
        f" {report['total_s'] / 60:.0f} minutes; `bench/scale.py` says how each figure is"
        " taken. One container, the distinct facts of `bench/factgen.py`, each system in turn"
        " within a round.\n\n" + table(report) + "\n" + links + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="store sizes (comma-separated)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--singles", type=int, default=500, help="writes of the 1-writer phase")
    parser.add_argument("--per-writer", type=int, default=100, help="writes of each of 8 writers")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--peer-src", type=Path, help="SuperLocalMemoryV2 checkout's src/")
    parser.add_argument("--peer-python", type=Path, help="its interpreter (with its extras)")
    parser.add_argument("--no-floor", action="store_true", help="leave SQLite FTS5 out")
    parser.add_argument("--dir", type=Path, help="where the stores go (a temporary dir inside)")
    parser.add_argument("--out", type=Path, help="write the section into this page")
    parser.add_argument("--json", type=Path, help="write every figure of every round here")
    parser.add_argument("--rebuild", action="store_true", help="time a rebuild of each store")
    parser.add_argument("--keep", type=Path, help="move mnemolog's last store here, not delete")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    peer = args.peer_src is not None and args.peer_python is not None
    if not peer:
        progress("no --peer-src/--peer-python: SuperLocalMemory V2 left out")
    plan_of = {s: Plan(s, args.singles, 8, args.per_writer, args.queries) for s in sizes}
    most = max(p.total for p in plan_of.values())
    progress(f"generating {most:,} distinct facts")
    facts = distinct_facts(most, seed=1)
    started = time.perf_counter()
    report: dict[str, Any] = {
        "command": "python bench/scale.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "code": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
        ).stdout.strip(),
        "sizes": {},
    }
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        work = Path(tmp)
        facts_file = work / "facts.jsonl"
        with facts_file.open("w") as out:
            for fact in facts:
                out.write(json.dumps({"text": fact.text, "question": fact.question}) + "\n")
        for size in sizes:
            plan = plan_of[size]
            rounds = []
            for n in range(args.rounds):
                found: dict[str, dict[str, float]] = {}
                progress(f"{size:,}, round {n + 1}: mnemolog")
                last = size == sizes[-1] and n == args.rounds - 1
                found[SYSTEMS[0]] = run_mnemolog(
                    plan, facts, work, rebuilt=args.rebuild, keep=args.keep if last else None
                )
                if peer:
                    progress(f"{size:,}, round {n + 1}: SuperLocalMemory V2")
                    found[SYSTEMS[1]] = run_peer(
                        plan, facts_file, work, args.peer_src, args.peer_python
                    )
                if not args.no_floor:
                    progress(f"{size:,}, round {n + 1}: SQLite FTS5")
                    found[SYSTEMS[2]] = run_floor(plan, facts, work)
                rounds.append(found)
            report["sizes"][str(size)] = rounds
    report["total_s"] = time.perf_counter() - started
    print(table(report))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1))
    if args.out is not None:
        plots = plot(report, args.out.parent / "benchmarks")
        write_section(args.out, SECTION, section(report, plots, args.out))
        progress(f"wrote {args.out}")


if __name__ == "__main__":
    main()
