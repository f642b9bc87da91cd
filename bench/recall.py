"""Writes, batched ingest, search, boot and rebuild through the REST API of a real server.

For each embedder tier and store size, a ``mnemolog serve`` child process is started on a free
loopback port with a fresh data directory (in a temporary directory removed afterwards). The
store is filled with N distinct synthetic memories by batched ``POST /memories`` (timed:
memories/s), then ``POST /search`` runs a few hundred queries (p50/p95/p99, and the server's own
per-stage latencies read back from ``/inspect``), then 1 and 8 writer threads send
single-memory ``POST /memories`` requests for a fixed time (acknowledged writes/s, latency,
status mix). The server is stopped with SIGTERM and booted again on the populated store (time
until ``/health`` answers), stopped with SIGINT, the data directory measured (bytes per memory),
booted once more (the boot the goal is judged on), stopped, and ``mnemolog rebuild`` run on
it. Every figure is taken over HTTP, one keep-alive connection per client thread, with the
lean standard-library client of ``keepalive.py``; the round trip of an empty request
(``GET /health``) is printed as the floor under every latency. Nothing is asserted: goals are
reported as met or not met.

    .venv/bin/python bench/recall.py [--tiers quality,fast] [--sizes 1000,10000,100000]
                                     [--quick] [--seconds 5] [--queries 300] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from keepalive import KeepAlive, TransportError
from latency import latency_summary

MNEMOLOG = Path(sys.executable).parent / "mnemolog"
TIERS = ("quality", "fast")
DEFAULT_SIZES = (1_000, 10_000, 100_000)
QUALITY_MAX_SIZE = 10_000  # the quality tier ingests ~300 memories/s here: 100k takes 5 min+
WRITER_COUNTS = (1, 8)
WARMUP_REQUESTS = 10
# The options of POST /search that change what is found or its cost, each timed on its own
# with ``--search-options`` (the same queries for every option, after the default run). They
# ask with the words of a fact of the store's own kind, as an agent passing a statement would:
# it shares words with many stored facts, so every search fills a rerank's pool of 30.
SEARCH_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("no option (the default)", {}),
    ("recency: false", {"recency": False}),
    ("diversify: false", {"diversify": False}),
    ("rerank: true", {"rerank": True}),
    ("searchMode: memories", {"searchMode": "memories"}),
)
SEARCH_LIMIT = 10
BOOT_TIMEOUT = 600.0  # a first boot of the fast tier may distil its model (~40 s)
STOP_TIMEOUT = 120.0
REBUILD_TIMEOUT = 3600.0
HEALTH_POLL = 0.01

# Goals on a 2-core machine: (tier or None for both, size, figure, comparison, target, label).
GOALS: tuple[tuple[str | None, int, str, str, float, str], ...] = (
    ("fast", 10_000, "search_p50_ms", "<=", 2.0, "search p50 <= 2 ms"),
    ("fast", 10_000, "writes8_per_s", ">=", 2000.0, "8 writers >= 2,000 writes/s"),
    ("fast", 10_000, "ingest_per_s", ">=", 5000.0, "batched ingest >= 5,000 memories/s"),
    ("quality", 10_000, "search_p50_ms", "<=", 10.0, "search p50 <= 10 ms"),
    ("quality", 10_000, "writes8_per_s", ">=", 300.0, "8 writers >= 300 writes/s"),
    (None, 100_000, "rebuild_s", "<=", 60.0, "rebuild <= 60 s"),
    (None, 100_000, "boot_s", "<=", 2.0, "boot <= 2 s"),
)

# --- synthetic memories and queries ---------------------------------------------------------
#
# Facts an assistant might keep about people, their plans and their work: one or two clauses,
# each with several slots drawn from pools, so texts share little beyond their template words.
# In a container of 12,500 texts about 2% have a neighbour at cosine >= 0.85 with the fast tier
# (under 1% with the quality tier), so most writes are ``created``.


def _words(text: str) -> list[str]:
    return text.split()


def _pool(text: str) -> list[str]:
    return [item.strip() for item in text.replace("\n", " ").split("|")]


NAMES = _words("""Aisha Ben Carla Dmitri Elena Farid Grace Hiro Ines Jonas Kemi Liam Mei
Nadia Omar Priya Quentin Rosa Sven Tomas Uma Victor Wen Ximena Yusuf Zara Anders Bea Chidi
Dana Emeka Fatima Gustavo Hana Ivan Jia Kofi Lena Mateo Noor Olga Pablo Rahel Sanjay Talia
Ulrich Vera Wiktor Yara Zeno Amara Bruno Chloe Diego Esther Felix Gita Hamza Ingrid Jorge""")
RELATIONS = _words("""sister brother mother father daughter son manager landlord dentist
neighbour partner cousin accountant coach flatmate grandmother uncle aunt mentor lawyer""")
FOODS = _pool("""oat-milk lattes|spicy ramen|gluten-free pasta|dark chocolate|green tea|sourdough
bread|mango sticky rice|falafel wraps|black coffee|miso soup|vegan burgers|lemon tart|pickled
herring|pho|cold brew|sushi|chickpea curry|blueberry pancakes|goat cheese salad|mint tea|tiramisu|
kimchi fried rice|peanut butter toast|lentil soup|margherita pizza|iced matcha|shakshuka|paella|
beef tacos|oatmeal with honey|grilled sardines|pad thai|mushroom risotto|baklava|borscht|jollof
rice|pierogi|ceviche|banana bread|chai|sparkling water|espresso tonic|halloumi fries|butter
chicken|poke bowls|croissants|apple strudel|tom yum soup|cinnamon buns|quinoa salad""")
ADJECTIVES = _pool("""red|second-hand|waterproof|tiny|heavy|vintage|borrowed|broken|new|spare|
wooden|leather|cheap|pricey|signed|handmade|folding|blue|green|silver|antique|cracked|noisy|quiet|
shared|refurbished|oversized|striped|lightweight|rented""")
ITEMS = _pool("""laptop|bicycle|umbrella|guitar|passport|camera|kayak|sofa|printer|drone|telescope|
sewing machine|microwave|suitcase|violin|tent|coffee grinder|keyboard|monitor|scooter|watch|
backpack|mattress|bookshelf|espresso machine|e-reader|rowing machine|projector|chessboard|toolbox|
winter coat|hiking boots|desk lamp|router|phone|headphones|blender|paddleboard|easel|record
player""")
ACTIVITIES = _pool("""bouldering|sourdough baking|chess|trail running|watercolour painting|
birdwatching|jazz piano|pottery|sailing|salsa dancing|urban sketching|beekeeping|cycling to work|
knitting|astronomy|board games|surfing|restoring old radios|learning Japanese|growing tomatoes|
rock climbing|fencing|calligraphy|open-water swimming|woodworking|photography|yoga|tennis|karaoke|
origami|skiing|fly fishing|podcasting|volunteering at the shelter|crossword puzzles|marathon
training|ceramics|stand-up comedy|foraging|judo""")
CITIES = _pool("""Lisbon|Osaka|Nairobi|Montreal|Tallinn|Porto|Kraków|Hanoi|Valparaíso|Reykjavík|
Marrakesh|Ljubljana|Seoul|Cape Town|Bergen|Oaxaca|Tbilisi|Edinburgh|Da Nang|Bologna|Quito|
Vilnius|Adelaide|Kyoto|Zanzibar|Granada|Helsinki|Cusco|Antwerp|Busan|Dakar|Riga|Hobart|Cork|
Medellín|Taipei|Lyon|Tromsø|Penang|Salzburg""")
TOPICS = _pool("""the quarterly budget|the office move|the hiring plan|the new pricing page|the data
migration|the security audit|the holiday rota|the onboarding docs|the API redesign|the customer
survey|the server costs|the mobile release|the parental leave policy|the team offsite|the logo
refresh|the tax return|the kitchen renovation|the wedding guest list|the school application|the
mortgage offer|the car insurance|the garden fence|the book club pick|the conference talk|the grant
proposal|the dentist bill|the gym membership|the flat viewing|the piano recital|the marathon
route""")
TEAMS = _pool("""billing|search|mobile|infrastructure|design|data platform|security|onboarding|
payments|support tooling|legal|finance|research|growth""")
PROJECTS = _pool("""Falcon|Atlas|Nimbus|Orchard|Beacon|Harbor|Quartz|Juniper|Meridian|Tundra|
Cobalt|Lantern|Sequoia|Vesper|Kestrel|Marble|Drift|Ember|Polaris|Willow""")
PLACES = _pool("garage|attic|office|car|basement|hallway cupboard|storage unit")
WEEKDAYS = _words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
MONTHS = _words("""January February March April May June July August September October November
December""")
TIMES = ["7:30", "8:15", "9 am", "10:45", "noon", "1:30 pm", "3 pm", "4:20 pm", "6 pm", "8 pm"]
LANGUAGES = _pool("""Portuguese|Swahili|Korean|Finnish|Arabic|Dutch|Hindi|Polish|Spanish|
Vietnamese|Greek|Turkish|Tamil|Hebrew|Icelandic""")
ALLERGENS = _pool("""peanuts|shellfish|penicillin|cats|pollen|latex|gluten|bee stings|dust mites|
sesame|ibuprofen|lactose|kiwi|mould""")


def _who(r: random.Random) -> str:
    if r.random() < 0.35:
        return f"{r.choice(NAMES)}'s {r.choice(RELATIONS)}"
    return r.choice(NAMES)


def _item(r: random.Random) -> str:
    return f"{r.choice(ADJECTIVES)} {r.choice(ITEMS)}"


def _a(phrase: str) -> str:
    return ("an " if phrase[0] in "aeiou" else "a ") + phrase


def _when(r: random.Random) -> str:
    options: list[Callable[[], str]] = [
        lambda: f"every {r.choice(WEEKDAYS)}",
        lambda: f"since {r.choice(MONTHS)} {r.randint(2012, 2025)}",
        lambda: f"on {r.choice(WEEKDAYS)} at {r.choice(TIMES)}",
        lambda: f"before the trip to {r.choice(CITIES)}",
        lambda: f"after {r.choice(TOPICS)} is settled",
        lambda: f"by {r.choice(MONTHS)} {r.randint(1, 28)}",
        lambda: f"while staying in {r.choice(CITIES)}",
        lambda: f"until the {r.choice(PROJECTS)} launch",
    ]
    return r.choice(options)()


def _clause(r: random.Random, who: str) -> str:
    options: list[Callable[[], str]] = [
        lambda: f"{who} prefers {r.choice(FOODS)} over {r.choice(FOODS)}",
        lambda: f"{who} is allergic to {r.choice(ALLERGENS)}",
        lambda: f"{who} lives in {r.choice(CITIES)}",
        lambda: f"{who} lent the {_item(r)} to {r.choice(NAMES)}",
        lambda: f"{who} wants to sell the {_item(r)}",
        lambda: f"{who} took up {r.choice(ACTIVITIES)}",
        lambda: f"{who} is learning {r.choice(LANGUAGES)}",
        lambda: f"{who} owes {r.choice(NAMES)} {r.randint(2, 90) * 5} euros for {r.choice(TOPICS)}",
        lambda: f"{who} leads {r.choice(TOPICS)} for the {r.choice(TEAMS)} team",
        lambda: f"{who} joined project {r.choice(PROJECTS)}",
        lambda: f"{who} is worried about {r.choice(TOPICS)}",
        lambda: f"{who} flies to {r.choice(CITIES)}",
        lambda: f"{who} bought {_a(_item(r))}",
        lambda: f"{who} cannot eat {r.choice(FOODS)}",
        lambda: f"{who} asked for a reminder about {r.choice(TOPICS)}",
        lambda: f"{who} recommended {r.choice(ACTIVITIES)} to {r.choice(NAMES)}",
        lambda: f"{who} lost the {_item(r)}",
        lambda: f"{who} has a call with the {r.choice(TEAMS)} team",
        lambda: f"{who} gave up {r.choice(ACTIVITIES)}",
        lambda: f"{who} keeps the {_item(r)} in the {r.choice(PLACES)}",
    ]
    return r.choice(options)()


def memory_text(r: random.Random) -> str:
    """One or two clauses about someone, ~75 characters on average."""
    text = _clause(r, _who(r))
    if r.random() < 0.6:
        text += " " + _when(r)
    if r.random() < 0.5:
        who = r.choice(["she", "he", "they"]) if r.random() < 0.5 else _who(r)
        text += f", {r.choice(['and', 'but', 'so', 'because'])} {_clause(r, who)}"
    return text[0].upper() + text[1:] + "."


def memory_texts(seed: int) -> Iterator[str]:
    """Distinct memory texts, endlessly (the pools allow billions)."""
    r = random.Random(seed)
    seen: set[str] = set()
    while True:
        text = memory_text(r)
        if text not in seen:
            seen.add(text)
            yield text


def query_text(r: random.Random) -> str:
    """A question an agent might ask its memory."""
    name, relation = r.choice(NAMES), r.choice(RELATIONS)
    options: list[Callable[[], str]] = [
        lambda: f"What is {name} allergic to?",
        lambda: f"Where does {name}'s {relation} live?",
        lambda: f"Who has the {r.choice(ITEMS)} now?",
        lambda: f"When is {name} travelling to {r.choice(CITIES)}?",
        lambda: f"What food does {name} like?",
        lambda: f"Which team is handling {r.choice(TOPICS)}?",
        lambda: f"hobbies of {name}",
        lambda: f"How much money does {name} owe?",
        lambda: f"who joined project {r.choice(PROJECTS)}",
        lambda: f"Does {name} speak {r.choice(LANGUAGES)}?",
        lambda: f"reminders about {r.choice(TOPICS)}",
        lambda: f"Where is the {r.choice(ITEMS)} kept?",
    ]
    return r.choice(options)()


# --- figures ----------------------------------------------------------------------------------


def disk_usage(root: Path) -> dict[str, Any]:
    """Allocated bytes (as ``du`` counts them) under ``root``, in total and per part."""
    parts: Counter[str] = Counter()
    apparent = 0
    for path in root.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        stat = path.stat()
        apparent += stat.st_size
        relative = path.relative_to(root).parts
        part = "/".join(relative[:2]) if relative[0] == "projections" else relative[0]
        parts[part] += stat.st_blocks * 512
    return {"bytes": sum(parts.values()), "apparent_bytes": apparent, "parts": dict(parts)}


# --- the server -------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(pid: int, count_key: str, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``run()``'s figures plus the CPU the server (``pid``) and this client process spent
    on each of its ``count_key`` items, in milliseconds."""
    server0, client0 = cpu_seconds(pid), time.process_time()
    figures = run()
    server, client = cpu_seconds(pid) - server0, time.process_time() - client0
    count = max(figures.get(count_key) or 0, 1)
    figures["server_cpu_ms_each"] = server * 1e3 / count
    figures["client_cpu_ms_each"] = client * 1e3 / count
    return figures


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    """``mnemolog serve`` in a child process on a free loopback port; output goes to a file."""

    def __init__(self, data_dir: Path, env: dict[str, str], log_path: Path) -> None:
        self.data_dir = data_dir
        self.env = env
        self.log_path = log_path
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        """Start the process; seconds until ``/health`` first answered 200."""
        with self.log_path.open("ab") as log:
            started = time.perf_counter()
            self.proc = subprocess.Popen(
                [
                    str(MNEMOLOG),
                    "serve",
                    "--data-dir",
                    str(self.data_dir),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
            )
        deadline = started + BOOT_TIMEOUT
        with KeepAlive(self.base_url, timeout=5.0) as client:
            while time.perf_counter() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(
                        f"server exited with {self.proc.returncode}: {self.log_tail()}"
                    )
                try:
                    if client.get("/health").status_code == 200:
                        return time.perf_counter() - started
                except TransportError:
                    pass
                time.sleep(HEALTH_POLL)
        raise TimeoutError(f"{self.base_url} did not answer /health in {BOOT_TIMEOUT:g} s")

    def stop(self, how: signal.Signals = signal.SIGINT) -> dict[str, Any]:
        """Send ``how`` and wait: seconds it took and the exit code (-N: killed by signal N).

        SIGINT is Ctrl-C. A service manager sends SIGTERM; both ask the server to stop
        gracefully. Its own shutdown (saving what it keeps in memory) has run to the end when
        the exit code is 0, or -15 after SIGTERM: uvicorn re-raises that signal once it has
        shut down, so that the exit status tells a service manager how the process ended.
        """
        if self.proc is None or self.proc.poll() is not None:
            return {"signal": how.name, "seconds": 0.0, "exit_code": None}
        started = time.perf_counter()
        self.proc.send_signal(how)
        try:
            self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return {
            "signal": how.name,
            "seconds": time.perf_counter() - started,
            "exit_code": self.proc.returncode,
        }

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    @property
    def pid(self) -> int:
        return 0 if self.proc is None else self.proc.pid

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def client(base_url: str) -> KeepAlive:
    """One keep-alive connection with TCP_NODELAY."""
    return KeepAlive(base_url, timeout=120.0)


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- the measurements -------------------------------------------------------------------------


def ingest(
    base_url: str, containers: list[str], size: int, batch: int, seed: int, label: str
) -> dict[str, Any]:
    """Fill the store with ``size`` memories by batched POST /memories, round robin over
    containers; acknowledged memories per second over the whole fill, and the latency of each
    batch request.

    The bodies are made before the clock starts: making the texts (about 20 µs each) is this
    client's work, not the server's, and was a tenth of the time measured when done inside it.
    """
    texts = memory_texts(seed)
    bodies = [
        {
            "containerTag": containers[n % len(containers)],
            "memories": [{"content": next(texts)} for _ in range(min(batch, size - n * batch))],
        }
        for n in range(math.ceil(size / batch))
    ]
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    errors = 0
    sent = 0
    report_every = max(1, len(bodies) // 10)
    with client(base_url) as http:
        began = time.perf_counter()
        for n, body in enumerate(bodies):
            t0 = time.perf_counter()
            response = http.post("/memories", json=body)
            latencies.append(time.perf_counter() - t0)
            sent += len(body["memories"])
            if response.status_code != 200:
                errors += 1
                continue
            statuses.update(m["status"] for m in response.json()["memories"])
            if (n + 1) % report_every == 0:
                elapsed = time.perf_counter() - began
                progress(f"  {label}: ingested {sent:,}/{size:,} in {elapsed:.0f} s")
        elapsed = time.perf_counter() - began
    acknowledged = sum(statuses.values())
    return {
        "memories": acknowledged,
        "sent": sent,
        "batch": batch,
        "requests": len(latencies),
        "seconds": elapsed,
        "per_s": acknowledged / elapsed,
        "statuses": dict(statuses),
        "errors": errors,
        **latency_summary(latencies),
    }


def search(
    base_url: str,
    containers: list[str],
    count: int,
    seed: int,
    options: dict[str, Any] | None = None,
    ask: Callable[[random.Random], str] | None = None,
) -> dict[str, Any]:
    """``count`` sequential POST /search (containerTag, limit 10, and ``options``) of the
    questions ``ask`` makes (``query_text``'s by default) after a short warm-up, then the
    server's per-stage latencies of those recalls, read back from /inspect."""
    ask = ask or query_text
    r = random.Random(seed)
    latencies: list[float] = []
    traces: list[str] = []
    hits: list[int] = []
    errors = 0
    with client(base_url) as http:
        began = 0.0
        for n in range(WARMUP_REQUESTS + count):
            if n == WARMUP_REQUESTS:
                began = time.perf_counter()
            body = {"q": ask(r), "containerTag": r.choice(containers), "limit": SEARCH_LIMIT}
            t0 = time.perf_counter()
            response = http.post("/search", json=body | (options or {}))
            elapsed = time.perf_counter() - t0
            if n < WARMUP_REQUESTS:
                continue
            if response.status_code != 200:
                errors += 1
                continue
            latencies.append(elapsed)
            answer = response.json()
            traces.append(answer["traceId"])
            hits.append(len(answer["results"]))
        elapsed_all = time.perf_counter() - began
        floor: list[float] = []  # an empty request on the same connection
        for _ in range(count):
            t0 = time.perf_counter()
            http.get("/health")
            floor.append(time.perf_counter() - t0)
        stages: dict[str, list[float]] = {}
        for trace in traces:
            response = http.get(f"/inspect/{trace}")
            if response.status_code != 200:
                continue
            for stage, ms in (response.json().get("latencyMs") or {}).items():
                stages.setdefault(stage, []).append(ms / 1e3)
    server = {stage: latency_summary(samples)["p50_ms"] for stage, samples in stages.items()}
    return {
        "queries": len(latencies),
        "seconds": elapsed_all,
        "per_s": len(latencies) / elapsed_all,
        "errors": errors,
        "mean_results": sum(hits) / len(hits) if hits else 0.0,
        "stage_p50_ms": server,
        "empty_request_p50_ms": latency_summary(floor)["p50_ms"],
        **latency_summary(latencies),
    }


def writes(
    base_url: str, containers: list[str], writers: int, seconds: float, seed: int
) -> dict[str, Any]:
    """``writers`` threads, each with its own client, sending single-memory POST /memories for
    ``seconds``; a write counts once its 200 answer (sent after the durable append) is read."""
    latencies: list[list[float]] = [[] for _ in range(writers)]
    statuses: list[Counter[str]] = [Counter() for _ in range(writers)]
    errors = [0] * writers
    start = threading.Barrier(writers + 1, timeout=BOOT_TIMEOUT)
    deadline = 0.0

    def writer(index: int) -> None:
        texts = memory_texts(seed * 1000 + index)
        with client(base_url) as http:
            try:  # connection and first-call costs, not counted
                for n in range(WARMUP_REQUESTS):
                    body = {
                        "containerTag": containers[(index + n) % len(containers)],
                        "memories": [{"content": next(texts)}],
                    }
                    http.post("/memories", json=body)
            finally:
                start.wait()
            n = 0
            while True:  # at least one write each, however short the run
                body = {
                    "containerTag": containers[(index + n) % len(containers)],
                    "memories": [{"content": next(texts)}],
                }
                t0 = time.perf_counter()
                try:
                    response = http.post("/memories", json=body)
                except TransportError:
                    errors[index] += 1
                    response = None
                t1 = time.perf_counter()
                if response is not None and response.status_code == 200:
                    latencies[index].append(t1 - t0)
                    statuses[index][response.json()["memories"][0]["status"]] += 1
                elif response is not None:
                    errors[index] += 1
                n += 1
                if t1 >= deadline:
                    break

    threads = [
        threading.Thread(target=writer, args=(i,), name=f"bench-writer-{i}") for i in range(writers)
    ]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    deadline = began + seconds
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    acknowledged = sum(len(mine) for mine in latencies)
    mix: Counter[str] = sum(statuses, Counter())
    return {
        "writers": writers,
        "writes": acknowledged,
        "seconds": elapsed,
        "per_s": acknowledged / elapsed,
        "statuses": dict(mix),
        "errors": sum(errors),
        **latency_summary([s for mine in latencies for s in mine]),
    }


def store_counts(base_url: str) -> tuple[int, int]:
    """(live memories, log head seq) as the server reports them."""
    with client(base_url) as http:
        total = http.get("/memories", params={"limit": 1}).json()["total"]
        head = http.get("/health").json()["log"]["head"]
    return int(total), int(head)


def first_search(base_url: str, container: str) -> float:
    """Seconds the first search after a boot took (lazy model loading shows here)."""
    with client(base_url) as http:
        t0 = time.perf_counter()
        http.post("/search", json={"q": "What is Aisha allergic to?", "containerTag": container})
        return time.perf_counter() - t0


def rebuild(data_dir: Path, env: dict[str, str]) -> dict[str, Any]:
    """``mnemolog rebuild`` on the stopped store: wall time, and the replay time it prints."""
    started = time.perf_counter()
    done = subprocess.run(
        [str(MNEMOLOG), "rebuild", "--data-dir", str(data_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=REBUILD_TIMEOUT,
        check=False,
    )
    wall = time.perf_counter() - started
    match = re.search(r"rebuilt: (\d+) records replayed in ([0-9.]+) s", done.stdout)
    return {
        "seconds": wall,
        "replay_seconds": float(match.group(2)) if match else None,
        "records": int(match.group(1)) if match else None,
        "exit_code": done.returncode,
        "error": None if done.returncode == 0 else (done.stderr or done.stdout).strip()[-500:],
    }


def server_env(tier: str, model_cache_dir: Path | None) -> dict[str, str]:
    env = {**os.environ, "MNEMOLOG_EMBEDDER": tier}
    if model_cache_dir is not None:
        env["MNEMOLOG_MODEL_CACHE_DIR"] = str(model_cache_dir)
    return env


def prepare_tier(workdir: Path, tier: str, env: dict[str, str]) -> dict[str, Any]:
    """Boot once on an empty store: loads (or, the first time, builds) the tier's model, so
    the measured runs do not pay a one-time cost; its boot time is reported."""
    data_dir = workdir / f"{tier}-empty"
    server = Server(data_dir, env, workdir / f"{tier}-empty.log")
    try:
        boot = server.start()
        first = first_search(server.base_url, "c0")
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    return {"boot_s": boot, "first_search_ms": first * 1e3}


def bench_store(
    workdir: Path, tier: str, size: int, env: dict[str, str], args: argparse.Namespace
) -> dict[str, Any]:
    """Every measurement on one store of ``size`` memories."""
    label = f"{tier} {size:,}"
    data_dir = workdir / f"{tier}-{size}"
    containers = [f"user_{i:02d}" for i in range(args.containers)]
    run: dict[str, Any] = {"tier": tier, "size": size, "containers": args.containers}
    server = Server(data_dir, env, workdir / f"{tier}-{size}.log")
    try:
        run["empty_boot_s"] = server.start()
        run["server_pid"] = server.pid
        progress(f"{label}: server up (pid {server.pid}), ingesting")
        pid = server.pid
        run["ingest"] = measured(
            pid,
            "memories",
            lambda: ingest(server.base_url, containers, size, args.batch, size, label),
        )
        progress(f"{label}: {run['ingest']['per_s']:,.0f} memories/s; searching")
        run["search"] = measured(
            pid, "queries", lambda: search(server.base_url, containers, args.queries, size + 1)
        )
        if args.search_options:
            run["search_options"] = {}
            for name, options in SEARCH_OPTIONS:
                progress(f"{label}: searching with {name}")
                run["search_options"][name] = search(
                    server.base_url, containers, args.option_queries, size + 1, options, memory_text
                )
        run["writes"] = []
        for writers in WRITER_COUNTS:
            progress(f"{label}: {writers} writer(s) for {args.seconds:g} s")
            seed = size + 2 + writers
            run["writes"].append(
                measured(
                    pid,
                    "writes",
                    lambda n=writers, seed=seed: writes(
                        server.base_url, containers, n, args.seconds, seed
                    ),
                )
            )
        run["memories"], run["log_head"] = store_counts(server.base_url)
        # Stopped as a service manager would, then booted: what was not saved is replayed.
        run["stop_after_writes"] = server.stop(signal.SIGTERM)
        progress(f"{label}: booting on the populated store (after SIGTERM, then after SIGINT)")
        server = Server(data_dir, env, workdir / f"{tier}-{size}.log")
        run["boot_after_sigterm_s"] = server.start()
        run["stop_clean"] = server.stop(signal.SIGINT)
        run["disk"] = disk_usage(data_dir)
        run["disk"]["bytes_per_memory"] = run["disk"]["bytes"] / max(run["memories"], 1)
        server = Server(data_dir, env, workdir / f"{tier}-{size}.log")
        run["boot_s"] = server.start()
        run["first_search_ms"] = first_search(server.base_url, containers[0]) * 1e3
        server.stop()
        progress(f"{label}: rebuilding")
        run["rebuild"] = rebuild(data_dir, env)
    except Exception as exc:  # a crashed or refusing server is reported, not raised
        run["error"] = f"{type(exc).__name__}: {exc}"
        progress(f"{label}: failed: {run['error']}\n{server.log_tail()}")
    finally:
        server.kill()
        shutil.rmtree(data_dir, ignore_errors=True)
    return run


# --- goals and the report ---------------------------------------------------------------------


def figure(run: dict[str, Any], key: str) -> float | None:
    """One figure a goal is judged on, or None if the run did not produce it."""
    try:
        if key == "search_p50_ms":
            return float(run["search"]["p50_ms"])
        if key == "writes8_per_s":
            return float(next(w["per_s"] for w in run["writes"] if w["writers"] == 8))
        if key == "ingest_per_s":
            return float(run["ingest"]["per_s"])
        if key == "rebuild_s":
            return float(run["rebuild"]["seconds"]) if run["rebuild"]["exit_code"] == 0 else None
        if key == "boot_s":
            return float(run["boot_s"])
    except (KeyError, StopIteration, TypeError):
        return None
    raise ValueError(key)


def judge(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    verdicts = []
    for tier, size, key, op, target, label in GOALS:
        for t in TIERS if tier is None else (tier,):
            run = next((r for r in runs if r["tier"] == t and r["size"] == size), None)
            value = None if run is None else figure(run, key)
            met = None if value is None else (value <= target if op == "<=" else value >= target)
            verdicts.append(
                {
                    "tier": t,
                    "size": size,
                    "goal": label,
                    "figure": key,
                    "target": target,
                    "value": value,
                    "met": met,
                }
            )
    return verdicts


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _mix(statuses: dict[str, int]) -> str:
    total = sum(statuses.values()) or 1
    return " ".join(
        f"{statuses.get(s, 0) * 100 / total:.0f}%{s[0]}"
        for s in ("created", "superseded", "deduplicated")
    )


def _load(triple: list[float]) -> str:
    return "/".join(f"{x:.2f}" for x in triple)


def _mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def render_run(run: dict[str, Any]) -> list[str]:
    head = f"{run['tier']} tier, {run['size']:,} memories in {run['containers']} containers"
    if "ingest" in run:
        head += f" (store built by batched ingest in {run['ingest']['seconds']:.1f} s)"
    lines = [head]
    if "error" in run:
        lines.append(f"  FAILED: {run['error']}")
    header = (
        f"  {'run':<20}{'count':>8}{'per s':>9}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}"
        f"{'max ms':>9}  {'status mix (c/s/d)':<20}{'errors':>6}"
    )
    rows = []
    if "ingest" in run:
        i = run["ingest"]
        rows.append(
            (
                f"ingest {i['batch']}/request",
                i["memories"],
                i["per_s"],
                i,
                i["statuses"],
                i["errors"],
            )
        )
    if "search" in run:
        s = run["search"]
        rows.append(("search (1 client)", s["queries"], s["per_s"], s, {}, s["errors"]))
    for w in run.get("writes", []):
        name = f"{w['writers']} writer" + ("s" if w["writers"] > 1 else "")
        rows.append((name, w["writes"], w["per_s"], w, w["statuses"], w["errors"]))
    if rows:
        lines.append(header)
    for name, count, per_s, lat, statuses, errors in rows:
        mix = _mix(statuses) if statuses else ""
        lines.append(
            f"  {name:<20}{count:>8,}{per_s:>9,.0f}{_ms(lat['p50_ms']):>9}{_ms(lat['p95_ms']):>9}"
            f"{_ms(lat['p99_ms']):>9}{_ms(lat['max_ms']):>9}  {mix:<20}{errors:>6}"
        )
    if "search" in run:
        s = run["search"]
        stages = s["stage_p50_ms"]
        inside = sum(v for v in stages.values() if v is not None)
        rest = (s["p50_ms"] or 0) - inside
        lines.append(
            "  search stages, server p50 ms: "
            + ", ".join(f"{k} {_ms(v)}" for k, v in stages.items())
            + f"; rest of the request ~{rest:.2f} (HTTP, allowed set, trace append + sync);"
            f" {s['mean_results']:.1f} results a query; an empty request (GET /health)"
            f" {_ms(s.get('empty_request_p50_ms'))} p50"
        )
    for name, o in run.get("search_options", {}).items():
        stages = ", ".join(f"{k} {_ms(v)}" for k, v in o["stage_p50_ms"].items())
        lines.append(
            f"  search, {name}: p50 {_ms(o['p50_ms'])} ms, p95 {_ms(o['p95_ms'])} ms"
            f" ({o['queries']} queries, {o['errors']} errors); server p50 ms: {stages}"
        )
    cpu = [
        (name, figures)
        for name, figures in [
            ("ingest", run.get("ingest")),
            ("search", run.get("search")),
            *((f"{w['writers']} writer(s)", w) for w in run.get("writes", [])),
        ]
        if figures is not None and "server_cpu_ms_each" in figures
    ]
    if cpu:
        lines.append(
            "  CPU ms per memory / query / write, server + this client: "
            + "; ".join(
                f"{name} {f['server_cpu_ms_each']:.2f} + {f['client_cpu_ms_each']:.2f}"
                for name, f in cpu
            )
        )
    if "disk" in run:
        d = run["disk"]
        parts = ", ".join(
            f"{k} {v * 100 / max(d['bytes'], 1):.0f}%"
            for k, v in sorted(d["parts"].items(), key=lambda kv: -kv[1])
            if v * 100 / max(d["bytes"], 1) >= 1
        )
        lines.append(
            f"  disk: {_mib(d['bytes'])} for {run['memories']:,} live memories"
            f" ({run['log_head']:,} log records) = {d['bytes_per_memory']:,.0f} B per memory"
            f" [{parts}]"
        )
    if "boot_s" in run:
        term, clean = run["stop_after_writes"], run["stop_clean"]
        lines.append(
            f"  boot on the populated store {run['boot_s']:.2f} s after a SIGINT stop (exit"
            f" {clean['exit_code']}, {clean['seconds']:.2f} s), first search after it"
            f" {run['first_search_ms']:.0f} ms; empty store {run['empty_boot_s']:.2f} s"
        )
        lines.append(
            f"  boot after SIGTERM right after the writes {run['boot_after_sigterm_s']:.2f} s"
            f" (SIGTERM stop: exit {term['exit_code']}, {term['seconds']:.2f} s"
            + (
                "; the server's shutdown did not finish"
                if term["exit_code"] not in (0, -15)
                else ""
            )
            + ")"
        )
    if "rebuild" in run:
        rb = run["rebuild"]
        if rb["exit_code"] == 0:
            lines.append(
                f"  rebuild {rb['seconds']:.2f} s wall ({rb['replay_seconds']:.2f} s replaying"
                f" {rb['records']:,} records; the rest is start-up)"
            )
        else:
            lines.append(f"  rebuild failed (exit {rb['exit_code']}): {rb['error']}")
    return lines


def render(report: dict[str, Any]) -> str:
    env = report["environment"]
    lines = [
        "mnemolog: writes, batched ingest, search, boot and rebuild through the REST API",
        f"  {env['dir']}  |  {env['cpus']} CPUs  |  Python {env['python']}  |  client"
        f" {env['client']}  |  {report['seconds']:g} s per write run, {report['queries']}"
        " queries",
        f"  load average before {_load(env['load_average_before'])}, after"
        f" {_load(env['load_average_after'])} (other processes on the machine skew every figure)",
    ]
    for tier, prep in report["tiers"].items():
        if "error" in prep:
            lines.append(f"  {tier} tier: FAILED to start: {prep['error']}")
        else:
            lines.append(
                f"  {tier} tier: first boot on an empty store {prep['boot_s']:.2f} s, first"
                f" search {prep['first_search_ms']:.0f} ms"
            )
    for skipped in report["skipped"]:
        lines.append(f"  skipped: {skipped}")
    for run in report["runs"]:
        lines += ["", *render_run(run)]
    lines += ["", "goals (2-core machine):"]
    for g in report["goals"]:
        verdict = "not measured" if g["met"] is None else ("met" if g["met"] else "NOT met")
        value = "" if g["value"] is None else f" (measured {g['value']:,.2f})"
        lines.append(f"  {g['tier']:<8}{g['size']:>8,}  {g['goal']:<38}{verdict}{value}")
    return "\n".join(lines)


def parse_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiers", default=",".join(TIERS), help="embedder tiers (quality,fast)")
    parser.add_argument(
        "--sizes",
        default=None,
        help="store sizes in memories (default 1000,10000,100000; --quick: 1000)",
    )
    parser.add_argument(
        "--quality-max-size",
        type=int,
        default=QUALITY_MAX_SIZE,
        help=f"largest size run with the quality tier (default {QUALITY_MAX_SIZE}: it ingests"
        " ~300 memories/s, so 100k would take 5 min or more)",
    )
    parser.add_argument("--seconds", type=float, default=None, help="per write run (default 5)")
    parser.add_argument("--queries", type=int, default=None, help="searches (default 300)")
    parser.add_argument("--batch", type=int, default=500, help="memories per ingest request")
    parser.add_argument("--containers", type=int, default=8, help="containers the store spans")
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path("."),
        help="directory on the disk to measure; a temporary directory is made inside it and "
        "removed afterwards (default: the current directory)",
    )
    parser.add_argument(
        "--model-cache-dir",
        type=Path,
        default=None,
        help="MNEMOLOG_MODEL_CACHE_DIR for the servers (default: the server's own setting)",
    )
    parser.add_argument(
        "--search-options",
        action="store_true",
        help="also time each search option of SEARCH_OPTIONS on every store",
    )
    parser.add_argument(
        "--option-queries", type=int, default=200, help="searches per option (default 200)"
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1k, short runs")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    tiers = parse_list(args.tiers)
    if not tiers or any(t not in TIERS for t in tiers):
        parser.error(f"--tiers takes a comma-separated subset of {', '.join(TIERS)}")
    try:
        sizes = [int(s) for s in parse_list(args.sizes)] if args.sizes else None
    except ValueError:
        parser.error("--sizes takes comma-separated integers")
    sizes = sizes or ([1_000] if args.quick else list(DEFAULT_SIZES))
    args.seconds = args.seconds or (2.0 if args.quick else 5.0)
    args.queries = args.queries or (100 if args.quick else 300)
    if min(sizes) < 1 or args.seconds <= 0 or args.queries < 1 or not 1 <= args.batch <= 1000:
        parser.error("sizes, --seconds and --queries must be positive; --batch 1 to 1000")
    if args.containers < 1:
        parser.error("--containers must be positive")
    if not MNEMOLOG.exists():
        parser.error(f"{MNEMOLOG} not found: run from the project's virtualenv")

    load_before = os.getloadavg()
    workdir = Path(tempfile.mkdtemp(prefix="mnemolog-bench-", dir=args.dir)).resolve()
    runs: list[dict[str, Any]] = []
    prepared: dict[str, Any] = {}
    skipped: list[str] = []
    started = time.perf_counter()
    try:
        for tier in tiers:
            env = server_env(tier, args.model_cache_dir)
            try:
                prepared[tier] = prepare_tier(workdir, tier, env)
            except Exception as exc:
                prepared[tier] = {"error": f"{type(exc).__name__}: {exc}"}
                continue
            for size in sizes:
                if tier == "quality" and size > args.quality_max_size:
                    skipped.append(
                        f"quality tier at {size:,} (over --quality-max-size"
                        f" {args.quality_max_size:,})"
                    )
                    continue
                runs.append(bench_store(workdir, tier, size, env, args))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    report: dict[str, Any] = {
        "benchmark": "recall",
        "seconds": args.seconds,
        "queries": args.queries,
        "batch": args.batch,
        "total_seconds": time.perf_counter() - started,
        "environment": {
            "dir": str(args.dir.resolve()),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "client": "http.client, keep-alive (bench/keepalive.py)",
            "load_average_before": load_before,
            "load_average_after": os.getloadavg(),
        },
        "tiers": prepared,
        "skipped": skipped,
        "runs": runs,
        "goals": judge(runs),
    }
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
