"""Trace fidelity of the learned ranker over HTTP: does every recall replay exactly?

A real ``mnemolog serve`` child process on a free loopback port, on a fresh data dir in a
temporary directory (removed afterwards unless ``--keep``), with API keys live: two agents'
keys, ``agent-a`` and ``agent-b``, made the documented way (``mnemolog keys add AGENT --admin``)
before the server starts. Both are admin keys, because ``POST /ranker/train`` takes the user's
or an admin key and both agents train. The store is then used as a client of the learned
ranker uses it, in phases, each timed:

1. **write**: one container of ``--memories`` (480) distinct synthetic memories (the
   ``memory_texts`` of ``recall.py``), by batched ``POST /memories`` with key A;
2. **A uses**: ``--recalls`` (1,000) recalls by key A, one at a time (``POST /search``, limit
   10), each followed by ``POST /recalls/{traceId}/used`` naming one or two served results;
3. **train A**, then **A uses** (half as many), **B grades** (half as many: ``POST
   /recalls/{traceId}/feedback``, a grade 0 to 3 for one or two results), **train B**;
4. **8 threads** at once, each ``--recalls / 8`` recalls, A's threads with a use, B's with a
   grade;
5. **restart** (SIGTERM, and the server started again on the same data dir), then a quarter
   as many recalls with a use or a grade;
6. the server stopped, ``mnemolog replay --check-traces --json`` re-derives every recorded
   recall from the log (the trace-fidelity figure), and the log is read for what the ranker
   did: how many recalls ran the learned stage (``learned``), how many a served model ranked
   (``params.ranker``), how many were explored, and the models trained, promoted and rolled
   back.

The questions are built from the memories' own words (a span of three to five content words
of one memory), ``--recalls / 5`` of them, each asked again and again (about 16 times over a
default run), so the ranker has alike recalls. Each question has one "right" memory, drawn
the first time it is asked among the first five served (its source memory half the time,
else the one at position 2 to 5): the agent uses it (A) or grades it 3 or 2 (B) when it is served,
in 80% of the recalls, else picks results weighted 1/position; so a model can learn something
the order before it does not know, and be promoted. The choices are seeded; which memories
the server serves, and its exploration (drawn from random recall ids), are not, so two runs
differ in their details.

A full default run (3,250 recalls, 480 memories) took 4 min 7 s and 6 min 56 s in two runs on
the shared 2-core development machine (load average 3 to 5), the replay check 178 s and 351 s
of it; the HTTP phases take about a minute. Both runs replayed all 3,250 traces exactly; the
background training promoted a model twice while the recalls ran (in the second run, during
phases 2 and 3), and 2,936 and 2,816 recalls were ranked by one. Feedback counted stays at 600
an hour per agent in the container (the ranker's rate limit): of about 3,600 feedback events,
1,200 count. Nothing is asserted: the figures are printed, and "goal met" when every
verifiable trace replays exactly.

    .venv/bin/python bench/trace_fidelity.py [--recalls 1000] [--memories 480] [--json]
                                             [--keep] [--dir DIR] [--embedder fast|quality]
"""

from __future__ import annotations

import argparse
import http.client
import json
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
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import msgspec
from keepalive import Response, TransportError
from latency import latency_summary
from recall import MNEMOLOG, Server, memory_texts, progress

from mnemolog.eventlog.datadir import log_dir
from mnemolog.eventlog.events import (
    RankerPromoted,
    RankerRolledBack,
    RankerTrained,
    RecallFeedback,
    RecallPerformed,
    RecallUsed,
)
from mnemolog.eventlog.lmdb_log import LmdbEventLog

CONTAINER = "fidelity"
AGENTS = ("agent-a", "agent-b")
SEARCH_LIMIT = 10
WRITE_BATCH = 100
THREADS = 8
SEED = 20_260_707
RIGHT_RATE = 0.8  # how often the right memory is picked when it is served
SECOND_RATE = 0.3  # how often a second result is used or graded beside the first
KEYS_TIMEOUT = 300.0
REPLAY_TIMEOUT = 3_600.0
_STOP_TEXT = """a an the to of in on at by for from with over into and but so because since until
while after before every is are was be has have had she he they her his their it its i my me we
our you your this that these those not no now"""
STOP_WORDS = frozenset(_STOP_TEXT.split())


# --- the client -------------------------------------------------------------------------------


class BearerClient:
    """One keep-alive HTTP/1.1 connection with ``TCP_NODELAY`` that sends an API key: the
    lean client of ``keepalive.py``, with ``Authorization: Bearer``."""

    def __init__(self, base_url: str, token: str | None, timeout: float = 120.0) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme != "http" or parts.hostname is None:
            raise ValueError(f"an http:// URL with a host is needed, not {base_url!r}")
        self._host = parts.hostname
        self._port = parts.port or 80
        self._timeout = timeout
        self._authorization = None if token is None else f"Bearer {token}"
        self._connection: http.client.HTTPConnection | None = None

    def _connected(self) -> http.client.HTTPConnection:
        if self._connection is None:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
            connection.connect()
            assert connection.sock is not None
            connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._connection = connection
        return self._connection

    def request(self, method: str, path: str, body: Any = None) -> Response:
        headers = {} if self._authorization is None else {"authorization": self._authorization}
        payload = None
        if body is not None:
            payload = msgspec.json.encode(body)
            headers["content-type"] = "application/json"
        connection = self._connected()
        try:
            connection.request(method, path, body=payload, headers=headers)
            answer = connection.getresponse()
            content = answer.read()
        except TransportError:
            self.close()
            raise
        if answer.will_close:
            self.close()
        return Response(answer.status, content)

    def get(self, path: str) -> Response:
        return self.request("GET", path)

    def post(self, path: str, body: Any) -> Response:
        return self.request("POST", path, body)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


# --- questions and what the agents say about the answers ---------------------------------------


@dataclass(frozen=True)
class Question:
    text: str
    source: int  # the index of the memory its words come from


def make_questions(texts: list[str], count: int, seed: int) -> list[Question]:
    """``count`` distinct questions, each a span of three to five content words of one
    memory, in one of a few phrasings."""
    r = random.Random(seed)
    phrasings = ("What about {}?", "Tell me about {}", "{}?", "anything on {}", "remind me: {}")
    questions: list[Question] = []
    seen: set[str] = set()
    order = list(range(len(texts)))
    r.shuffle(order)
    for index in order * 4:
        if len(questions) >= count:
            break
        words = [w for w in re.findall(r"[\w'-]+", texts[index]) if w.lower() not in STOP_WORDS]
        if len(words) < 3:
            continue
        size = min(len(words), r.randint(3, 5))
        start = r.randint(0, len(words) - size)
        text = r.choice(phrasings).format(" ".join(words[start : start + size]))
        if text not in seen:
            seen.add(text)
            questions.append(Question(text, index))
    return questions


class Answers:
    """The right memory of each question, drawn the first time it is asked (shared by every
    thread)."""

    def __init__(self, source_ids: list[str]) -> None:
        self._source_ids = source_ids
        self._right: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def right(self, question: Question, served: list[str], r: random.Random) -> str | None:
        with self._lock:
            if question.text not in self._right:
                source = self._source_ids[question.source]
                head = served[:5]
                if source in head and r.random() < 0.5:
                    self._right[question.text] = source
                elif len(head) > 1:
                    self._right[question.text] = r.choice(head[1:])
                else:
                    self._right[question.text] = head[0] if head else None
            return self._right[question.text]


def biased_pick(r: random.Random, count: int, other_than: set[int]) -> int | None:
    """A position (0-based) of ``count`` served results, weighted 1/position."""
    positions = [i for i in range(count) if i not in other_than]
    if not positions:
        return None
    return r.choices(positions, weights=[1 / (i + 1) for i in positions])[0]


def picks(r: random.Random, served: list[str], right: str | None) -> list[int]:
    """One or two positions of the served results: the right memory's in ``RIGHT_RATE`` of
    the recalls where it is served, else one weighted 1/position; a second one sometimes."""
    if not served:
        return []
    first = served.index(right) if right in served and r.random() < RIGHT_RATE else None
    if first is None:
        first = biased_pick(r, len(served), set())
    assert first is not None
    chosen = [first]
    if r.random() < SECOND_RATE:
        second = biased_pick(r, len(served), {first})
        if second is not None:
            chosen.append(second)
    return chosen


# --- one agent's recalls ----------------------------------------------------------------------


@dataclass
class Tally:
    """What one phase (or one thread of it) did."""

    recalls: int = 0
    uses: int = 0
    grades: int = 0
    empty: int = 0  # searches that served nothing
    errors: Counter[str] = field(default_factory=Counter)
    search_s: list[float] = field(default_factory=list)
    trace_ids: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.recalls += other.recalls
        self.uses += other.uses
        self.grades += other.grades
        self.empty += other.empty
        self.errors.update(other.errors)
        self.search_s += other.search_s
        self.trace_ids += other.trace_ids


def recall_and_say(
    client: BearerClient,
    kind: str,
    question: Question,
    answers: Answers,
    r: random.Random,
    tally: Tally,
) -> None:
    """One recall, then a use (``kind`` "use") or one or two grades ("grade")."""
    body = {"q": question.text, "containerTag": CONTAINER, "limit": SEARCH_LIMIT}
    t0 = time.perf_counter()
    try:
        response = client.post("/search", body)
    except TransportError as exc:
        tally.errors[f"search {type(exc).__name__}"] += 1
        return
    tally.search_s.append(time.perf_counter() - t0)
    if response.status_code != 200:
        tally.errors[f"search {response.status_code}"] += 1
        return
    answer = response.json()
    trace_id: str = answer["traceId"]
    tally.recalls += 1
    tally.trace_ids.append(trace_id)
    results = [hit for hit in answer["results"] if hit.get("type", "memory") == "memory"]
    served_ids = [hit["id"] for hit in results]
    versions = [hit["versionId"] for hit in results]
    if not results:
        tally.empty += 1
    right = answers.right(question, served_ids, r)
    chosen = picks(r, served_ids, right)
    try:
        if kind == "use":
            said = client.post(
                f"/recalls/{trace_id}/used", {"versionIds": [versions[i] for i in chosen]}
            )
            tally.uses += 1
            if said.status_code != 200:
                tally.errors[f"used {said.status_code}"] += 1
            return
        for i in chosen:
            grade = (3 if r.random() < 0.8 else 2) if served_ids[i] == right else r.randint(0, 1)
            said = client.post(
                f"/recalls/{trace_id}/feedback", {"versionId": versions[i], "grade": grade}
            )
            tally.grades += 1
            if said.status_code != 200:
                tally.errors[f"feedback {said.status_code}"] += 1
    except TransportError as exc:
        tally.errors[f"feedback {type(exc).__name__}"] += 1


def run_recalls(
    base_url: str,
    plan: list[tuple[str, str]],
    questions: list[Question],
    answers: Answers,
    seed: int,
) -> Tally:
    """``plan``: (token, kind) per recall, in order, on one connection per token."""
    r = random.Random(seed)
    tally = Tally()
    clients: dict[str, BearerClient] = {}
    try:
        for token, kind in plan:
            client = clients.get(token)
            if client is None:
                client = clients[token] = BearerClient(base_url, token)
            recall_and_say(client, kind, r.choice(questions), answers, r, tally)
    finally:
        for client in clients.values():
            client.close()
    return tally


def run_threads(
    base_url: str,
    plans: list[list[tuple[str, str]]],
    questions: list[Question],
    answers: Answers,
    seed: int,
) -> Tally:
    """Each plan on a thread of its own, all started together."""
    tallies = [Tally() for _ in plans]
    barrier = threading.Barrier(len(plans))

    def work(n: int) -> None:
        barrier.wait()
        tallies[n] = run_recalls(base_url, plans[n], questions, answers, seed + n)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(len(plans))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    total = Tally()
    for tally in tallies:
        total.add(tally)
    return total


def tally_json(tally: Tally, seconds: float) -> dict[str, Any]:
    return {
        "seconds": seconds,
        "recalls": tally.recalls,
        "uses": tally.uses,
        "grades": tally.grades,
        "empty_searches": tally.empty,
        "errors": dict(tally.errors),
        "search": latency_summary(tally.search_s),
    }


# --- the server and the checks ------------------------------------------------------------------


def make_key(data_dir: Path, agent: str, env: dict[str, str]) -> str:
    """``mnemolog keys add AGENT --admin``: the token it prints once."""
    done = subprocess.run(
        [str(MNEMOLOG), "keys", "add", agent, "--admin", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=KEYS_TIMEOUT,
        env=env,
        check=False,
    )
    token = done.stdout.strip()
    if done.returncode != 0 or not token.startswith("mnl_"):
        raise RuntimeError(f"mnemolog keys add {agent} failed: {done.stderr[-1000:]}")
    return token


def write_memories(base_url: str, token: str, texts: list[str]) -> dict[str, Any]:
    """Batched POST /memories; the memory id of each text, in order."""
    ids: list[str] = []
    statuses: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    with BearerClient(base_url, token) as client:
        for start in range(0, len(texts), WRITE_BATCH):
            batch = texts[start : start + WRITE_BATCH]
            response = client.post(
                "/memories",
                {"containerTag": CONTAINER, "memories": [{"content": t} for t in batch]},
            )
            if response.status_code != 200:
                errors[str(response.status_code)] += 1
                ids += [""] * len(batch)
                continue
            written = response.json()["memories"]
            ids += [m["id"] for m in written]
            statuses.update(m["status"] for m in written)
    return {"ids": ids, "statuses": dict(statuses), "errors": dict(errors)}


def train(base_url: str, token: str) -> dict[str, Any]:
    """POST /ranker/train (every container): what each training did."""
    with BearerClient(base_url, token, timeout=600.0) as client:
        response = client.post("/ranker/train", {})
    if response.status_code != 200:
        return {"error": f"{response.status_code}: {response.content[:500]!r}", "trained": []}
    trained: list[dict[str, Any]] = response.json()["trained"]
    return {"trained": trained}


def log_head(base_url: str) -> int | None:
    """The log's head seq, from GET /health (which needs no key)."""
    with BearerClient(base_url, None) as client:
        response = client.get("/health")
    if response.status_code != 200:
        return None
    head: int = response.json()["log"]["head"]
    return head


def ranker_state(base_url: str, token: str) -> dict[str, Any]:
    """GET /ranker for the container: what serves it and the feedback counted."""
    with BearerClient(base_url, token) as client:
        response = client.get(f"/ranker?containerTag={CONTAINER}")
    if response.status_code != 200:
        return {"error": f"{response.status_code}: {response.content[:500]!r}"}
    state: dict[str, Any] = response.json()
    return state


def replay_check(data_dir: Path, env: dict[str, str]) -> dict[str, Any]:
    """``mnemolog replay --check-traces --json`` over the whole log (the server stopped)."""
    done = subprocess.run(
        [str(MNEMOLOG), "replay", "--check-traces", "--json", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=REPLAY_TIMEOUT,
        env=env,
        check=False,
    )
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"exit_code": done.returncode, "error": (done.stdout + done.stderr)[-2000:]}
    return {"exit_code": done.returncode, **report}


def read_log(data_dir: Path) -> dict[str, Any]:
    """What the log says the ranker did: per recall, the learned stage and the model that
    ranked it; the feedback events; the models trained, promoted and rolled back."""
    recalls: dict[str, dict[str, Any]] = {}
    counts: Counter[str] = Counter()
    promoted: list[dict[str, Any]] = []
    rolled_back: list[dict[str, Any]] = []
    log = LmdbEventLog(log_dir(data_dir), readonly=True)
    try:
        for stored in log.read():
            event = stored.record.event
            match event:
                case RecallPerformed():
                    ranker = event.params.get("ranker")
                    recalls[event.recall_id] = {
                        "seq": stored.seq,
                        "learned": event.learned is not None,
                        "ranker": ranker if isinstance(ranker, str) else None,
                        "explored": event.params.get("explore") is not None,
                    }
                case RecallUsed():
                    counts["recall.used"] += 1
                case RecallFeedback():
                    counts["recall.feedback"] += 1
                case RankerTrained():
                    counts["ranker.trained"] += 1
                case RankerPromoted():
                    promoted.append(
                        {"seq": stored.seq, "containerTag": event.container_tag, **_digest(event)}
                    )
                case RankerRolledBack():
                    rolled_back.append(
                        {
                            "seq": stored.seq,
                            "containerTag": event.container_tag,
                            "reason": event.reason,
                            **_digest(event),
                        }
                    )
        head = log.head().seq
    finally:
        log.close()
    return {
        "head": head,
        "recalls": recalls,
        "counts": dict(counts),
        "promoted": promoted,
        "rolled_back": rolled_back,
    }


def _digest(event: RankerPromoted | RankerRolledBack) -> dict[str, str]:
    return {"digest": event.digest[:16]}


_IDS = re.compile(r"\b(?:ver|mem|trc|rcl)_[0-9a-f]+\b|\b\d+(?:\.\d+)?(?:e-?\d+)?\b")


def reason_kind(reason: str) -> str:
    """A reason with its ids and numbers blanked, to count alike reasons together."""
    return _IDS.sub("#", reason)


# --- the run ------------------------------------------------------------------------------------


@dataclass
class Run:
    args: argparse.Namespace
    workdir: Path
    data_dir: Path
    env: dict[str, str]
    phases: dict[str, dict[str, Any]] = field(default_factory=dict)
    phase_of: dict[str, str] = field(default_factory=dict)  # trace id -> phase
    trainings: list[dict[str, Any]] = field(default_factory=list)
    server_log: Path | None = None

    def timed(self, name: str, seconds: float, figures: dict[str, Any] | None = None) -> None:
        self.phases[name] = {"seconds": seconds, **(figures or {})}
        progress(f"  {name}: {seconds:.1f} s")

    def recalls(self, name: str, tally: Tally, seconds: float) -> None:
        for trace_id in tally.trace_ids:
            self.phase_of[trace_id] = name
        self.timed(name, seconds, tally_json(tally, seconds))


def plan_of(token: str, kind: str, count: int) -> list[tuple[str, str]]:
    return [(token, kind)] * count


def mixed_plan(tokens: tuple[str, str], count: int, seed: int) -> list[tuple[str, str]]:
    """A's recalls with a use and B's with a grade, interleaved at random."""
    r = random.Random(seed)
    return [(tokens[0], "use") if r.random() < 0.5 else (tokens[1], "grade") for _ in range(count)]


def exercise(run: Run) -> dict[str, Any]:
    """Phases 1 to 5 against the server; the server is stopped at the end."""
    args, env, data_dir = run.args, run.env, run.data_dir
    n = args.recalls
    started = time.perf_counter()
    tokens = (make_key(data_dir, AGENTS[0], env), make_key(data_dir, AGENTS[1], env))
    run.timed("keys", time.perf_counter() - started)
    token_a, token_b = tokens

    texts_iter = memory_texts(SEED)
    texts = [next(texts_iter) for _ in range(args.memories)]
    questions = make_questions(texts, max(1, n // 5), SEED + 1)

    run.server_log = run.workdir / "server.log"
    server = Server(data_dir, env, run.server_log)
    boot = server.start()
    run.timed("boot", boot)
    try:
        t0 = time.perf_counter()
        written = write_memories(server.base_url, token_a, texts)
        run.timed(
            "1 write",
            time.perf_counter() - t0,
            {
                "memories": len(texts),
                "statuses": written["statuses"],
                "errors": written["errors"],
                "head": log_head(server.base_url),
            },
        )
        answers = Answers(written["ids"])

        def recalls(name: str, plan: list[tuple[str, str]], seed: int) -> None:
            progress(f"  {name}: {len(plan):,} recalls ...")
            t = time.perf_counter()
            tally = run_recalls(server.base_url, plan, questions, answers, seed)
            run.recalls(name, tally, time.perf_counter() - t)
            run.phases[name]["head"] = log_head(server.base_url)

        def training(name: str, token: str) -> None:
            t = time.perf_counter()
            result = train(server.base_url, token)
            result["phase"] = name
            run.trainings.append(result)
            run.timed(name, time.perf_counter() - t, {"head": log_head(server.base_url)})
            for model in result["trained"]:
                tag = model["containerTag"] or "global"
                progress(
                    f"    {tag}: promoted {model['promoted']}, examples {model['examples']},"
                    f" digest {(model['digest'] or '-')[:16]}"
                    + (f", {model['reason']}" if model.get("reason") else "")
                )

        recalls("2 A uses", plan_of(token_a, "use", n), SEED + 10)
        training("3 train A", token_a)
        recalls("3 A uses", plan_of(token_a, "use", n // 2), SEED + 11)
        recalls("3 B grades", plan_of(token_b, "grade", n // 2), SEED + 12)
        training("3 train B", token_b)

        plans = [
            plan_of(token_a, "use", n // THREADS)
            if k % 2 == 0
            else plan_of(token_b, "grade", n // THREADS)
            for k in range(THREADS)
        ]
        progress(f"  4 eight threads: {sum(map(len, plans)):,} recalls ...")
        t = time.perf_counter()
        tally = run_threads(server.base_url, plans, questions, answers, SEED + 100)
        run.recalls("4 eight threads", tally, time.perf_counter() - t)
        run.phases["4 eight threads"]["head"] = log_head(server.base_url)

        t = time.perf_counter()
        stopped = server.stop(signal.SIGTERM)
        server = Server(data_dir, env, run.server_log)
        boot = server.start()
        run.timed(
            "5 restart",
            time.perf_counter() - t,
            {"sigterm_exit": stopped["exit_code"], "stop_s": stopped["seconds"], "boot_s": boot},
        )
        recalls("5 after restart", mixed_plan(tokens, n // 4, SEED + 13), SEED + 14)
        state = ranker_state(server.base_url, token_a)
    finally:
        t = time.perf_counter()
        stopped = server.stop(signal.SIGTERM)
        server.kill()
        run.timed("stop", time.perf_counter() - t, {"exit_code": stopped["exit_code"]})
    return {"questions": len(questions), "ranker": state}


def summarise(
    run: Run, used: dict[str, Any], check: dict[str, Any], log: dict[str, Any]
) -> dict[str, Any]:
    traces: list[dict[str, Any]] = check.pop("traces", None) or []
    recalls: dict[str, dict[str, Any]] = log.pop("recalls")
    differing = [t for t in traces if t["status"] == "differs"]
    reasons: Counter[str] = Counter()
    for t in differing:
        reasons.update({reason_kind(r) for r in t.get("reasons", [])})
    by_phase: dict[str, Counter[str]] = {}
    for t in traces:
        phase = run.phase_of.get(t["trace_id"], "other")
        by_phase.setdefault(phase, Counter())[t["status"]] += 1
    unverifiable = [t for t in traces if t["status"] == "unverifiable"]
    ranked = sum(1 for r in recalls.values() if r["ranker"])
    learned = sum(1 for r in recalls.values() if r["learned"])
    models = Counter(r["ranker"][:16] for r in recalls.values() if r["ranker"])
    return {
        "checked": check.get("checked"),
        "exact": check.get("exact"),
        "differs": check.get("differs"),
        "unverifiable": check.get("unverifiable"),
        "fidelity": check.get("fidelity"),
        "replay_exit_code": check.get("exit_code"),
        "replay_error": check.get("error"),
        "goal_met": check.get("fidelity") == 1.0,
        "recalls_logged": len(recalls),
        "learned_stage": learned,
        "ranked_by_model": ranked,
        "ranked_by_digest": dict(models),
        "explored": sum(1 for r in recalls.values() if r["explored"]),
        "differs_learned": sum(
            1 for t in differing if recalls.get(t["trace_id"], {}).get("learned")
        ),
        "differs_ranked": sum(1 for t in differing if recalls.get(t["trace_id"], {}).get("ranker")),
        "by_phase": {k: dict(v) for k, v in by_phase.items()},
        "reasons": reasons.most_common(10),
        "differing": [
            {
                "trace_id": t["trace_id"],
                "seq": t["seq"],
                "phase": run.phase_of.get(t["trace_id"], "other"),
                **recalls.get(t["trace_id"], {}),
                "reasons": t.get("reasons", []),
            }
            for t in differing
        ],
        "unverifiable_reasons": Counter(
            reason_kind(r) for t in unverifiable for r in t.get("reasons", [])
        ).most_common(5),
        "log": log,
        "questions": used["questions"],
        "ranker": used["ranker"],
    }


def phase_at(phases: dict[str, dict[str, Any]], seq: int) -> str:
    """The phase during (or just after) which the record at ``seq`` was appended."""
    for name, figures in phases.items():
        head = figures.get("head")
        if head is not None and seq <= head:
            return name
    return "the end"


def render(report: dict[str, Any]) -> str:
    f = report["fidelity"]
    env = report["environment"]
    lines = [
        "mnemolog: trace fidelity of the learned ranker over HTTP",
        f"  {report['memories']} memories in one container, {report['questions']} questions;"
        f" {report['recalls']:,} recalls in phase 1; {env['cpus']} CPUs, Python {env['python']};"
        f" load average before {'/'.join(f'{x:.2f}' for x in env['load_average_before'])},"
        f" after {'/'.join(f'{x:.2f}' for x in env['load_average_after'])}",
    ]
    if report.get("error"):
        lines.append(f"  FAILED: {report['error']}")
    lines += ["", "phases (wall time):"]
    for name, p in report["phases"].items():
        line = f"  {name:<18}{p['seconds']:>8.1f} s"
        if "recalls" in p:
            s = p["search"]
            p50 = "-" if s["p50_ms"] is None else f"{s['p50_ms']:.1f}"
            p99 = "-" if s["p99_ms"] is None else f"{s['p99_ms']:.1f}"
            line += (
                f"  {p['recalls']:>5,} recalls, {p['uses']:>5,} uses, {p['grades']:>5,} grades,"
                f" search p50 {p50} ms, p99 {p99} ms"
            )
            if p["empty_searches"]:
                line += f", {p['empty_searches']} served nothing"
            if p["errors"]:
                line += f", errors {p['errors']}"
        elif "statuses" in p:
            line += f"  {p['memories']} memories {p['statuses']}"
            if p["errors"]:
                line += f", errors {p['errors']}"
        elif "sigterm_exit" in p:
            line += (
                f"  SIGTERM exit {p['sigterm_exit']} in {p['stop_s']:.1f} s,"
                f" boot {p['boot_s']:.1f} s"
            )
        elif "exit_code" in p:
            line += f"  exit {p['exit_code']}"
        lines.append(line)
    lines.append(f"  {'total':<18}{report['total_seconds']:>8.1f} s")
    lines += ["", "trainings (POST /ranker/train):"]
    for t in report["trainings"]:
        if t.get("error"):
            lines.append(f"  {t['phase']}: {t['error']}")
        for m in t["trained"]:
            tag = m["containerTag"] or "global"
            what = (
                f"model {m['digest'][:16]}, promoted {m['promoted']}" if m["digest"] else "no model"
            )
            lines.append(
                f"  {t['phase']}: {tag}: {what}, {m['examples']} examples"
                + (f" ({m['reason']})" if m.get("reason") else "")
            )
    if f:
        log = f["log"]
        counts = log["counts"]
        ranker = f["ranker"]
        lines += [
            "",
            f"the log: head {log['head']:,}, {f['recalls_logged']:,} recalls,"
            f" {counts.get('recall.used', 0):,} uses, {counts.get('recall.feedback', 0):,} grades,"
            f" {counts.get('ranker.trained', 0)} models trained (background included),"
            f" {len(log['promoted'])} promoted, {len(log['rolled_back'])} rolled back",
        ]
        for p in log["promoted"]:
            lines.append(
                f"  promoted at seq {p['seq']} ({phase_at(report['phases'], p['seq'])}):"
                f" {p['containerTag'] or 'global'} {p['digest']}"
            )
        for p in log["rolled_back"]:
            lines.append(
                f"  rolled back at seq {p['seq']} ({phase_at(report['phases'], p['seq'])}):"
                f" {p['containerTag'] or 'global'} {p['digest']}"
                f" ({p['reason']})"
            )
        lines.append(
            f"  {f['learned_stage']:,} recalls ran the learned stage, {f['ranked_by_model']:,}"
            f" were ranked by a served model (params.ranker: {f['ranked_by_digest'] or 'none'}),"
            f" {f['explored']:,} explored"
        )
        for c in ranker.get("containers", []) if isinstance(ranker, dict) else []:
            fb = c.get("feedback") or {}
            lines.append(
                f"  GET /ranker at the end: {c['containerTag']} served by {c['serving']};"
                f" feedback recorded {fb.get('recorded')}, counted {fb.get('counted')},"
                f" labelled recalls {fb.get('recalls')}"
            )
        fid = "-" if f["fidelity"] is None else f"{f['fidelity']:.2%}"
        replay_s = report["phases"].get("replay check", {}).get("seconds", 0.0)
        lines += [
            "",
            f"replay --check-traces ({replay_s:.0f} s, exit {f['replay_exit_code']}):",
            f"  traces checked {f['checked']}, exact {f['exact']}, differs {f['differs']},"
            f" unverifiable {f['unverifiable']}, fidelity {fid}",
        ]
        if f["replay_error"]:
            lines.append(f"  FAILED: {f['replay_error']}")
        for phase, statuses in f["by_phase"].items():
            lines.append(
                f"  {phase:<18}" + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))
            )
        if f["differs"]:
            lines.append(
                f"  of those that differ: {f['differs_learned']} ran the learned stage,"
                f" {f['differs_ranked']} were ranked by a model; most common reasons:"
            )
            lines += [f"    {count:>5}  {reason}" for reason, count in f["reasons"]]
            lines.append("  the first that differ:")
            for d in f["differing"][:10]:
                lines.append(
                    f"    {d['trace_id']} seq {d['seq']} ({d['phase']}): {'; '.join(d['reasons'])}"
                )
        if f["unverifiable_reasons"]:
            lines.append(f"  unverifiable: {f['unverifiable_reasons']}")
        lines += [
            "",
            "goal: every verifiable trace replays exactly: "
            + ("goal met" if f["goal_met"] else "NOT met"),
        ]
    if report.get("kept"):
        lines.append(f"data kept in {report['kept']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--recalls",
        type=int,
        default=1_000,
        help="recalls of the first phase; the others in proportion (default 1000: 3,250 in all)",
    )
    parser.add_argument("--memories", type=int, default=480, help="memories written (480)")
    parser.add_argument(
        "--embedder",
        choices=("fast", "quality"),
        default=None,
        help="MNEMOLOG_EMBEDDER for the server (default: the server's own setting)",
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="where the temporary directory is made (default: the system's)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the data dir and server log")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.recalls < THREADS or args.memories < 10:
        parser.error(f"--recalls must be at least {THREADS}, --memories at least 10")
    if not MNEMOLOG.exists():
        parser.error(f"{MNEMOLOG} not found: run from the project's virtualenv")

    env = {**os.environ}
    if args.embedder is not None:
        env["MNEMOLOG_EMBEDDER"] = args.embedder
    load_before = os.getloadavg()
    workdir = Path(tempfile.mkdtemp(prefix="mnemolog-fidelity-", dir=args.dir)).resolve()
    run = Run(args=args, workdir=workdir, data_dir=workdir / "data", env=env)
    started = time.perf_counter()
    error: str | None = None
    fidelity: dict[str, Any] | None = None
    try:
        used = exercise(run)
        progress("  replay --check-traces ...")
        t = time.perf_counter()
        check = replay_check(run.data_dir, env)
        run.timed("replay check", time.perf_counter() - t)
        t = time.perf_counter()
        log = read_log(run.data_dir)
        run.timed("read the log", time.perf_counter() - t)
        fidelity = summarise(run, used, check, log)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        if run.server_log is not None and run.server_log.exists():
            tail = run.server_log.read_text(errors="replace").splitlines()[-20:]
            error += "\n" + "\n".join(tail)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    report: dict[str, Any] = {
        "benchmark": "trace_fidelity",
        "recalls": args.recalls,
        "memories": args.memories,
        "questions": fidelity["questions"] if fidelity else None,
        "total_seconds": time.perf_counter() - started,
        "environment": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "embedder": env.get("MNEMOLOG_EMBEDDER", "auto"),
            "load_average_before": load_before,
            "load_average_after": os.getloadavg(),
        },
        "phases": run.phases,
        "trainings": run.trainings,
        "fidelity": fidelity,
        "error": error,
        "kept": str(workdir) if args.keep else None,
    }
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
