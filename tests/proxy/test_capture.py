"""Auto-capture: durable first-person facts are kept, secrets and sensitive facts never.

The secrets corpus (CredSweeper's labelled sample lines, beside the repository under
``../shared/bench-data/secrets/``) is fed as user turns with capture on; afterwards not one
secret value may be found anywhere in the data directory. It is read where it lies, never
copied here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from mnemolog.eventlog.events import CaptureDecided
from mnemolog.proxy.redact import MASK, redact, redact_entropy, redact_patterns

from .conftest import Proxy, start_proxy
from .fidelity import check_turns
from .scripted import Reply, ScriptedUpstream

ROOT = Path(__file__).resolve().parents[2]
SECRETS = ROOT.parent / "shared" / "bench-data" / "secrets" / "credsweeper"
CORPUS = Path(__file__).parent / "data" / "first_person_facts.txt"


def corpus() -> list[tuple[bool, str]]:
    return [
        (line[0] == "+", line[2:].strip())
        for line in CORPUS.read_text(encoding="utf-8").splitlines()
        if line[:1] in ("+", "-")
    ]


def say(proxy: Proxy, tag: str, text: str, **headers: str) -> httpx.Headers:
    with openai.OpenAI(
        base_url=proxy.v1,
        api_key="k",
        max_retries=0,
        default_headers={"x-mnemolog-container-tag": tag, **headers},
    ) as client:
        raw = client.chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": text}]
        )
    return raw.headers


def memories(proxy: Proxy, tag: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{proxy.base_url}/memories", params={"containerTag": tag, "limit": 500})
    found: list[dict[str, Any]] = response.json()["memories"]
    return found


# --- the redaction layers ------------------------------------------------------------------

# Built at run time so no scanner mistakes this file for a leak.
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
OPENAI = "sk-proj-" + "Zq8vN2xL5mR7tY1wK4pB9cF3hJ6dG0sA"
JWT = (
    "eyJhbGciOiJIUzI1NiJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0"
    + ".dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk"
)
PEM = (
    "-----BEGIN "
    + "RSA PRIVATE KEY-----\n"
    + "MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n"
    + "-----END RSA PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    "text",
    [
        f"my token is {GITHUB} ok",
        f"OPENAI_API_KEY={OPENAI}",
        f"Authorization: Bearer {JWT}",
        f"here it is {PEM} done",
        "the wifi password is Tr0ub4dor&3 for guests",
        "connect to postgres://admin:S3cr3tPw@db.internal:5432/app",
        "pay with 4111 1111 1111 1111 please",
        "transfer to DE89 3704 0044 0532 0130 00 today",
    ],
)
def test_pattern_rules_mask_modern_credentials(text: str) -> None:
    masked, count = redact_patterns(text)
    assert count >= 1 and MASK in masked
    for secret in (GITHUB, OPENAI, JWT, "Tr0ub4dor&3", "S3cr3tPw", "4111 1111", "DE89 3704"):
        assert secret not in masked


def test_cards_and_ibans_are_checked_not_guessed() -> None:
    assert redact_patterns("order 4111 1111 1111 1112 shipped")[1] == 0  # fails Luhn
    assert redact_patterns("ref DE89 3704 0044 0532 0130 02")[1] == 0  # fails mod 97


@pytest.mark.parametrize("token", ["wpv1jq9xwanbn3n", "GEHEIMN1S", "Prl23Db#@", "MYPSWRD!@#$%^&*"])
def test_the_entropy_layer_masks_what_no_rule_names(token: str) -> None:
    masked, count = redact_entropy(f"I keep {token} in my head")
    assert count == 1 and token not in masked


@pytest.mark.parametrize(
    "text",
    [
        "I was born in March 1988 and moved on 2015-06-01.",
        "I run 10km every Sunday at 7:30am.",
        "I'm left-handed and I don't like mornings.",
    ],
)
def test_ordinary_facts_are_left_alone(text: str) -> None:
    assert redact(text) == (text, 0)


# --- end to end ------------------------------------------------------------------------------


def test_first_person_facts_are_captured_and_nothing_else(proxy: Proxy) -> None:
    for _, text in corpus():
        headers = say(proxy, "u-capture", text, **{"x-mnemolog-capture": "on"})
        assert headers["x-mnemolog-capture"] == "on"
    stored = memories(proxy, "u-capture")
    assert sorted(m["content"] for m in stored) == sorted(t for fact, t in corpus() if fact)
    for memory in stored:
        assert memory["metadata"]["source"] == "capture"
        assert memory["metadata"]["verified"] is False
        assert memory["provenance"]["protocol"] == "proxy"
    trace = httpx.get(f"{proxy.base_url}/inspect/{headers['x-mnemolog-trace-id']}").json()
    assert trace["capture"]["method"] == "heuristic"
    decided = [
        s.record.event
        for s in proxy.runtime.log.read()
        if isinstance(s.record.event, CaptureDecided)
    ]
    excluded: dict[str, int] = {}
    for event in decided:
        for category, n in event.excluded.items():
            excluded[category] = excluded.get(category, 0) + n
    assert excluded == {"medical": 3, "financial": 2, "credentials": 1}


def test_capture_is_off_unless_asked(proxy: Proxy) -> None:
    headers = say(proxy, "u-no-capture", "I live in Oslo with my sister.")
    assert headers["x-mnemolog-capture"] == "off"
    assert memories(proxy, "u-no-capture") == []


def test_a_capture_can_be_forgotten_like_any_memory(proxy: Proxy) -> None:
    say(proxy, "u-undo", "I play chess every Tuesday evening.", **{"x-mnemolog-capture": "on"})
    (memory,) = memories(proxy, "u-undo")
    forgotten = httpx.post(
        f"{proxy.base_url}/memories/{memory['id']}/forget", json={"reason": "wrong"}
    )
    assert forgotten.status_code == 200
    assert memories(proxy, "u-undo") == []


@pytest.fixture(scope="module")
def distilling(
    tmp_path_factory: pytest.TempPathFactory, scripted: tuple[ScriptedUpstream, str]
) -> Iterator[Proxy]:
    data_dir = tmp_path_factory.mktemp("distill") / "data"
    yield from start_proxy(data_dir, scripted, capture=True, capture_distill=True)


def test_distillation_asks_the_same_upstream_and_its_failure_loses_nothing(
    distilling: Proxy,
) -> None:
    distilling.upstream.reset()
    distilling.upstream.distill_replies.extend(
        [
            Reply(content='["I live in Oslo.", "My password is hunter2."]'),
            Reply(status=500, error="distiller down"),
            Reply(content="Sure! Here are the facts: none that I can see."),
        ]
    )
    say(distilling, "u-distill", "Hi, I live in Oslo and my password is hunter2.")
    say(distilling, "u-distill", "I work as a baker in Bergen.")
    say(distilling, "u-distill", "I speak Norwegian and English.")
    contents = sorted(m["content"] for m in memories(distilling, "u-distill"))
    assert contents == [
        "I live in Oslo.",
        "I speak Norwegian and English.",
        "I work as a baker in Bergen.",
    ]
    decided = [
        s.record.event
        for s in distilling.runtime.log.read()
        if isinstance(s.record.event, CaptureDecided)
    ]
    assert [(d.method, d.fallback) for d in decided] == [
        ("distilled", None),
        ("heuristic", "distill_failed"),
        ("heuristic", "distill_unparsable"),
    ]
    assert decided[0].excluded == {"credentials": 1}
    distill_requests = [
        r for r in distilling.upstream.received if r not in distilling.upstream.chats()
    ]
    assert len(distill_requests) == 3
    assert "hunter2" in distill_requests[0].raw.decode() or MASK in distill_requests[0].raw.decode()


# --- the secrets corpus ----------------------------------------------------------------------


def secret_lines() -> list[dict[str, Any]]:
    path = SECRETS / "credsweeper_sample_lines.jsonl"
    if not path.exists():
        pytest.skip(f"the secrets corpus is not at {path} (it lives beside the repository)")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [row for row in rows if row["secrets"]]


def greppable(value: str) -> bool:
    """Values worth searching for: six characters or more (shorter ones match by chance), and
    not JWK ``"kty"`` labels, which name a key's type rather than hold its secret."""
    return len(value) >= 6 and '"kty"' not in value


def turns_of(rows: list[dict[str, Any]]) -> list[str]:
    """Each line raw and in first-person framings; a value that is a plain word is only
    recognisable as a secret by its context, so it is framed only with its context."""
    facts = [text for fact, text in corpus() if fact]
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
    turns = []
    for n in range(0, len(lines), 8):
        benign = facts[(n // 8) % len(facts)]
        turns.append("\n".join([*lines[n : n + 8], benign]))
    return turns


def test_no_secret_of_the_corpus_reaches_the_data_dir(
    tmp_path: Path, scripted: tuple[ScriptedUpstream, str]
) -> None:
    rows = secret_lines()
    scripted[0].reset()
    data_dir = tmp_path / "data"
    captured: list[dict[str, Any]] = []
    for proxy in start_proxy(data_dir, scripted, capture=True):
        with openai.OpenAI(base_url=proxy.v1, api_key="k", max_retries=0) as client:
            for text in turns_of(rows):
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": text}]
                )
        captured = memories(proxy, "default")
        check_turns(proxy.runtime, scripted[0], after_seq=0)
    assert captured, "capture was on: the benign facts fed alongside must be kept"
    values = {s["value"] for row in rows for s in row["secrets"] if greppable(s["value"])}
    assert len(values) > 300
    files = [p for p in data_dir.rglob("*") if p.is_file()]
    leaks = []
    for path in files:
        data = path.read_bytes().lower()
        leaks += [(str(path), v) for v in values if v.lower().encode() in data]
    assert leaks == [], leaks[:5]
    assert not any(re.search(r"\[redacted\]", m["content"]) for m in captured)
