"""The audit probes: trace fidelity over scripted proxied turns, and capture safety.

**Trace fidelity.** A real mnemolog server (in this process, on loopback) sits in front of the
scripted upstream of the tests (``tests/proxy/scripted.py``, which keeps the exact bytes of
every request it receives). A container is filled with synthetic memories, then ``--turns``
chat turns go through the proxy, drawn from a fixed seed: buffered or streamed, with zero, one
or two ``searchMemory`` rounds, each with its own query; the last quarter of them on a second
server on the same data dir with the proxy's rerank on (when the reranker is installed). Then,
from the log and the projections alone, each turn is rebuilt: every injected context is
rendered again from the versions its trace names and must have the recorded digest and be,
byte for byte, a tool message the upstream received; every round's recorded request digest
must be the digest of a body the upstream received. A turn is exact when all of that holds.
Last, ``mnemolog replay --check-traces`` re-derives every recorded recall from the log: the
share reproduced exactly is the replay fidelity. Both must be 100%.

**Capture safety.** Every labelled line of the secrets corpus
(``../shared/bench-data/secrets/credsweeper/credsweeper_sample_lines.jsonl``, fake credentials
from CredSweeper's tests, read where it lies) is sent as user turns with auto-capture on, raw
and in first-person framings, eight lines a turn with a benign first-person fact; then the
server is closed and every file of its data dir is read as bytes and searched (case folded)
for every secret value of the corpus. Values of six characters or more must be found 0 times
(shorter ones, and JWK ``"kty"`` labels that name a key's type, are counted apart: they match
ordinary bytes). Offline, the redaction (``mnemolog.proxy.redact.redact``) of each corpus line
gives the span recall (share of secret values no longer in the line) and the false-positive
rate (share of lines without a secret that it changed). The labelled first-person corpus of
the tests (``tests/proxy/data/first_person_facts.txt``) gives capture precision and recall.

    .venv/bin/python bench/audit.py [--tier fast|quality] [--turns 300] [--json]

Nothing is asserted; the goals are printed as met or not met.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "bench"
# The scripts beside this one are found last: bench/mcp.py must not hide the mcp package the
# server imports. The repository root is searched for the scripted upstream of the tests.
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != HERE] + [str(HERE)]

from recall import memory_texts, query_text  # noqa: E402

from mnemolog.api import create_app  # noqa: E402
from mnemolog.embedding import choose_tier, reranker_dir  # noqa: E402
from mnemolog.eventlog import Actor  # noqa: E402
from mnemolog.eventlog.events import ContextInjected, ProxyTurn  # noqa: E402
from mnemolog.memory import NewMemory, digest  # noqa: E402
from mnemolog.proxy.redact import redact  # noqa: E402
from mnemolog.runtime import Runtime  # noqa: E402
from mnemolog.settings import Settings  # noqa: E402
from tests.proxy.fidelity import rebuild_injection  # noqa: E402
from tests.proxy.scripted import Reply, ScriptedUpstream  # noqa: E402
from tests.servers import app_server  # noqa: E402

MNEMOLOG = Path(sys.executable).parent / "mnemolog"
DEFAULT_DATA = ROOT.parent / "shared" / "bench-data"
FACTS = ROOT / "tests" / "proxy" / "data" / "first_person_facts.txt"
TAG = "audit"
# The user's own history, imported as the user would import it: the user's agent ("local"),
# whose writes trust never refuses. An agent of its own would be refused part-way through a
# LongMemEval haystack (hundreds of writes in a burst), which is not what is measured here.
ACTOR = Actor(agent_id="local", protocol="import")
SEED = 20260702
MIN_VALUE = 6  # shorter secret values match ordinary bytes by chance


def progress(message: str) -> None:
    print(f"[audit] {message}", file=sys.stderr, flush=True)


@contextmanager
def proxy_server(
    data_dir: Path, upstream_url: str, tier: str, **settings: Any
) -> Iterator[tuple[str, Runtime]]:
    runtime = Runtime(
        Settings(
            data_dir=data_dir,
            embedder=tier,
            upstream_base_url=f"{upstream_url}/v1",
            **settings,
        )
    )
    try:
        with app_server(create_app(runtime)) as url:
            yield url, runtime
    finally:
        runtime.close()


def chat(client: httpx.Client, base: str, text: str, *, stream: bool, tag: str) -> str:
    """One turn through the proxy; returns the answer's text."""
    body = {"model": "m", "messages": [{"role": "user", "content": text}], "stream": stream}
    headers = {"x-mnemolog-container-tag": tag}
    if not stream:
        response = client.post(f"{base}/v1/chat/completions", json=body, headers=headers)
        response.raise_for_status()
        return str(response.json()["choices"][0]["message"].get("content") or "")
    parts: list[str] = []
    with client.stream(
        "POST", f"{base}/v1/chat/completions", json=body, headers=headers
    ) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            for choice in json.loads(line[6:]).get("choices") or []:
                parts.append((choice.get("delta") or {}).get("content") or "")
    return "".join(parts)


# --- trace fidelity ---------------------------------------------------------------------------


def scripted_turns(count: int, seed: int) -> list[tuple[bool, list[str]]]:
    """``count`` turns: (streamed, the searchMemory queries of its rounds, 0 to 2)."""
    r = random.Random(seed)
    return [
        (r.random() < 0.5, [query_text(r) for _ in range(r.choice((0, 1, 1, 2)))])
        for _ in range(count)
    ]


def check_turns(runtime: Runtime, upstream: ScriptedUpstream) -> dict[str, Any]:
    """Each recorded turn rebuilt from the log and projections alone, against the bytes the
    upstream received."""
    bodies = [r.raw for r in upstream.chats()]
    body_digests = {hashlib.sha256(raw).hexdigest() for raw in bodies}
    tool_messages: set[str] = set()
    for raw in bodies:
        for message in json.loads(raw)["messages"]:
            if message.get("role") == "tool" and isinstance(message.get("content"), str):
                tool_messages.add(message["content"])
    records = [stored.record.event for stored in runtime.log.read()]
    turns = [e for e in records if isinstance(e, ProxyTurn)]
    injections: dict[str, list[ContextInjected]] = {}
    for event in records:
        if isinstance(event, ContextInjected):
            injections.setdefault(event.trace_id, []).append(event)
    exact = 0
    failures: list[dict[str, str]] = []
    injected = 0
    for turn in turns:
        reasons = []
        for done in turn.rounds:
            if done.request_digest not in body_digests:
                reasons.append("a round's digest matches no body the upstream received")
        for injection in injections.get(turn.turn_id, []):
            injected += 1
            text = rebuild_injection(runtime, injection)
            if digest(text) != injection.sent_digest:
                reasons.append("the context rendered again does not have the recorded digest")
            elif text not in tool_messages:
                reasons.append("the upstream never received the context rendered again")
        if reasons:
            failures.append({"turn": turn.turn_id, "reason": reasons[0]})
        else:
            exact += 1
    return {
        "turns": len(turns),
        "exact": exact,
        "injections": injected,
        "rounds": sum(len(t.rounds) for t in turns),
        "fidelity": exact / len(turns) if turns else None,
        "failures": failures[:10],
    }


def replay_check(data_dir: Path, tier: str) -> dict[str, Any]:
    """``mnemolog replay --check-traces`` over the whole log."""
    started = time.perf_counter()
    done = subprocess.run(
        [str(MNEMOLOG), "replay", "--check-traces", "--json", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, "MNEMOLOG_EMBEDDER": tier},
        check=False,
    )
    seconds = time.perf_counter() - started
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"exit_code": done.returncode, "error": (done.stdout + done.stderr)[-2000:]}
    report.pop("traces", None)
    return {"exit_code": done.returncode, "seconds": seconds, **report}


def trace_fidelity(tier: str, turns: int, memories: int, scratch: Path) -> dict[str, Any]:
    data_dir = scratch / f"fidelity-{tier}"
    upstream = ScriptedUpstream("openai")
    script = scripted_turns(turns, SEED)
    reranked_from = turns - turns // 4 if reranker_dir_exists() else turns
    started = time.perf_counter()
    with app_server(upstream.app) as upstream_url, httpx.Client(timeout=120) as client:
        phases = [(0, reranked_from, False), (reranked_from, turns, True)]
        for first, last, rerank in phases:
            if first >= last:
                continue
            with proxy_server(data_dir, upstream_url, tier, proxy_rerank=rerank) as (url, rt):
                if first == 0:
                    texts = memory_texts(SEED)
                    for n in range(0, memories, 250):
                        items = [
                            NewMemory(content=next(texts)) for _ in range(min(250, memories - n))
                        ]
                        rt.core.writes.write(TAG, items, ACTOR)
                for number in range(first, last):
                    stream, queries = script[number]
                    replies = [
                        Reply(content=None, calls=[("searchMemory", {"query": q})]) for q in queries
                    ]
                    upstream.script(*replies, Reply(content=f"Answer number {number}."))
                    answer = chat(client, url, f"Question number {number}?", stream=stream, tag=TAG)
                    if answer != f"Answer number {number}.":
                        raise RuntimeError(f"turn {number} was answered {answer!r}")
                    if (number + 1) % 50 == 0:
                        progress(f"trace fidelity ({tier}): {number + 1}/{turns} turns")
                if last == turns:
                    checked = check_turns(rt, upstream)
    turns_s = time.perf_counter() - started
    progress(f"trace fidelity ({tier}): replaying every recorded recall")
    replayed = replay_check(data_dir, tier)
    return {
        "tier": tier,
        "turns_asked": turns,
        "reranked_turns": turns - reranked_from,
        "memories": memories,
        "turns_s": turns_s,
        "turns": checked,
        "replay": replayed,
    }


def reranker_dir_exists() -> bool:
    """Whether the reranker is installed in the model cache (``tools/fetch_models.py``)."""
    return reranker_dir(Settings().model_cache).is_dir()


# --- capture safety ---------------------------------------------------------------------------


def facts_corpus() -> list[tuple[bool, str]]:
    return [
        (line[0] == "+", line[2:].strip())
        for line in FACTS.read_text(encoding="utf-8").splitlines()
        if line[:1] in ("+", "-")
    ]


def secret_turns(rows: list[dict[str, Any]], facts: list[str]) -> list[str]:
    """Each positive line raw and in first-person framings, eight lines a turn with a benign
    fact; a value that is a plain word is recognisable as a secret only by its context, so it
    is framed only with its context."""
    lines: list[str] = []
    for row in rows:
        lines.append(row["text"])
        lines.append(f"My setting is {row['text'].strip()}")
        for secret in row["secrets"]:
            value = secret["value"]
            lines.append(f"My {secret['rule'].lower()} is {value}.")
            if not value.strip(".,;:!?'\"").isalpha():
                lines.append(f"I use {value} at work.")
                lines.append(f"I live in Lyon and my code is {value}.")
    return [
        "\n".join([*lines[n : n + 8], facts[(n // 8) % len(facts)]])
        for n in range(0, len(lines), 8)
    ]


def redaction_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    spans = masked = negatives = altered = 0
    for row in rows:
        text, _ = redact(row["text"])
        if not row["secrets"]:
            negatives += 1
            altered += text != row["text"]
            continue
        for secret in row["secrets"]:
            spans += 1
            masked += secret["value"] not in text
    return {
        "spans": spans,
        "masked": masked,
        "span_recall": masked / spans if spans else None,
        "negative_lines": negatives,
        "negative_lines_altered": altered,
        "false_positive_rate": altered / negatives if negatives else None,
    }


def scan(data_dir: Path, values: set[str]) -> dict[str, Any]:
    """Every file under ``data_dir``, as bytes, searched for every value (case folded)."""
    files = [p for p in data_dir.rglob("*") if p.is_file()]
    wanted = {v: v.lower().encode() for v in values}
    found: dict[str, list[str]] = {}
    size = 0
    for path in files:
        data = path.read_bytes().lower()
        size += len(data)
        for value, needle in wanted.items():
            if needle in data:
                found.setdefault(value, []).append(str(path.relative_to(data_dir)))
    return {"files": len(files), "bytes": size, "found": found}


def capture_safety(tier: str, data: Path, scratch: Path) -> dict[str, Any]:
    path = data / "secrets" / "credsweeper" / "credsweeper_sample_lines.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    positive = [row for row in rows if row["secrets"]]
    corpus = facts_corpus()
    benign = [text for fact, text in corpus if fact]
    turns = secret_turns(positive, benign)
    data_dir = scratch / "capture"
    upstream = ScriptedUpstream("openai")
    started = time.perf_counter()
    with (
        app_server(upstream.app) as upstream_url,
        httpx.Client(timeout=120) as client,
        proxy_server(data_dir, upstream_url, tier, capture=True) as (url, runtime),
    ):
        for number, text in enumerate(turns, start=1):
            chat(client, url, text, stream=False, tag="secrets")
            if number % 100 == 0:
                progress(f"capture safety: {number}/{len(turns)} turns of the secrets corpus")
        for _, text in corpus:
            chat(client, url, text, stream=False, tag="facts")
        captured = {
            tag: [
                row.content
                for row in runtime.core.memories.by_row_ids(
                    sorted(runtime.core.memories.live_rows(tag))
                ).values()
            ]
            for tag in ("secrets", "facts")
        }
    turns_s = time.perf_counter() - started
    progress("capture safety: scanning every file of the data dir for every secret value")
    values = {s["value"] for row in positive for s in row["secrets"]}
    long_values = {v for v in values if len(v) >= MIN_VALUE and '"kty"' not in v}
    scanned = scan(data_dir, values)
    found = scanned.pop("found")
    stored = sorted(v for v in found if v in long_values)
    kept = [c for c in captured["facts"] if c is not None]
    right = sum(1 for c in kept if c in benign)
    return {
        "tier": tier,
        "corpus_lines": len(rows),
        "positive_lines": len(positive),
        "turns": len(turns),
        "turns_s": turns_s,
        "values": len(values),
        "values_scanned_for_goal": len(long_values),
        "stored_secret_values": len(stored),
        "stored_examples": [
            {"value_sha256": hashlib.sha256(v.encode()).hexdigest()[:16], "files": found[v][:3]}
            for v in stored[:5]
        ],
        "short_or_label_values": len(values - long_values),
        "short_or_label_values_found": sum(1 for v in found if v not in long_values),
        **scanned,
        "benign_captured_beside_secrets": len(captured["secrets"]),
        "redaction": redaction_figures(rows),
        "capture": {
            "corpus_turns": len(corpus),
            "durable_facts": len(benign),
            "stored": len(kept),
            "stored_right": right,
            "precision": right / len(kept) if kept else None,
            "recall": len(set(kept) & set(benign)) / len(benign) if benign else None,
        },
    }


# --- report -----------------------------------------------------------------------------------


def render(report: dict[str, Any]) -> str:
    lines = []
    for run in report["fidelity"]:
        t, r = run["turns"], run["replay"]
        lines.append(
            f"trace fidelity, {run['tier']} tier: {t['exact']}/{t['turns']} turns rebuilt exactly"
            f" from their traces ({t['rounds']} upstream calls, {t['injections']} injected"
            f" contexts; {run['reranked_turns']} turns reranked)"
        )
        if "error" in r:
            lines.append(f"  replay --check-traces failed (exit {r['exit_code']}): {r['error']}")
        else:
            lines.append(
                f"  replay --check-traces: {r['exact']}/{r['checked']} recalls reproduced exactly,"
                f" {r['differs']} differ, {r['unverifiable']} unverifiable ({r['seconds']:.0f} s)"
            )
    c = report.get("capture")
    if c is not None:
        red, cap = c["redaction"], c["capture"]
        lines += [
            f"capture safety, {c['tier']} tier: {c['turns']} turns from {c['positive_lines']}"
            f" secret-bearing lines; {c['files']} files, {c['bytes']:,} bytes scanned for"
            f" {c['values']} secret values",
            f"  stored secret values (of {c['values_scanned_for_goal']} of >= {MIN_VALUE}"
            f" characters): {c['stored_secret_values']}; shorter values or key-type labels"
            f" found by chance: {c['short_or_label_values_found']} of"
            f" {c['short_or_label_values']}",
            f"  redaction: span recall {red['span_recall']:.3f} ({red['masked']}/{red['spans']}),"
            f" false-positive rate {red['false_positive_rate']:.3f}"
            f" ({red['negative_lines_altered']}/{red['negative_lines']} lines without a secret"
            " altered)",
            f"  capture of the labelled first-person corpus: precision {cap['precision']:.3f},"
            f" recall {cap['recall']:.3f} ({cap['stored']} stored of {cap['durable_facts']}"
            " durable facts)",
        ]
    lines.append("goals:")
    for goal in report["goals"]:
        lines.append(f"  {goal['goal']}: {goal['value']} -> {'met' if goal['met'] else 'NOT met'}")
    return "\n".join(lines)


def goals(report: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for run in report["fidelity"]:
        t, r = run["turns"], run["replay"]
        out.append(
            {
                "goal": f"trace fidelity ({run['tier']}): every turn rebuilt exactly",
                "value": f"{t['exact']}/{t['turns']}",
                "met": t["turns"] > 0 and t["exact"] == t["turns"],
            }
        )
        out.append(
            {
                "goal": f"trace fidelity ({run['tier']}): replay reproduces every recorded recall",
                "value": f"{r.get('exact')}/{r.get('checked')}",
                "met": r.get("exit_code") == 0 and r.get("differs") == 0 and bool(r.get("checked")),
            }
        )
    c = report.get("capture")
    if c is not None:
        out.append(
            {
                "goal": "capture safety: stored secret values 0",
                "value": c["stored_secret_values"],
                "met": c["stored_secret_values"] == 0,
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tier", action="append", help="embedder tier (repeatable; default: the product's)"
    )
    parser.add_argument("--turns", type=int, default=300, help="scripted proxied turns per tier")
    parser.add_argument("--memories", type=int, default=500, help="memories in the container")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the bench-data folder")
    parser.add_argument("--no-capture", action="store_true", help="trace fidelity only")
    parser.add_argument("--dir", type=Path, default=None, help="where the temporary dirs go")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    tiers = args.tier or [choose_tier("auto", None)]
    capture = not args.no_capture
    if capture and not (args.data / "secrets").is_dir():
        parser.error(f"no secrets corpus under {args.data} (use --data, or --no-capture)")
    report: dict[str, Any] = {"benchmark": "audit", "seed": SEED, "fidelity": []}
    with tempfile.TemporaryDirectory(prefix="mnemolog-bench-audit-", dir=args.dir) as tmp:
        for tier in tiers:
            report["fidelity"].append(trace_fidelity(tier, args.turns, args.memories, Path(tmp)))
        if capture:
            report["capture"] = capture_safety(tiers[0], args.data, Path(tmp))
    report["goals"] = goals(report)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
