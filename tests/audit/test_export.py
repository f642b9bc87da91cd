"""The export for outside audit, from a real server with a real history, checked by the stdlib
verifier: accepted untouched, rejected after any single-line tampering, never plaintext."""

from __future__ import annotations

import importlib.util
import io
import json
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from mnemolog.runtime import Runtime

from ..servers import MNEMOLOG
from .conftest import audit_server, write

ROOT = Path(__file__).resolve().parents[2]
VERIFIER = ROOT / "tools" / "verify_log.py"
ERASED = "Zanzibar locker 7781 holds Ada's passport"
PLAINTEXTS = [
    ERASED,
    "Ada prefers dark mode",
    "Ada prefers light mode",
    "The train to Paris leaves at noon",
    "The train to Paris leaves at one",
    "Grace keeps bees in Lyon",
    "user asked to hide it",
    "where does Ada sit on trains",
    "Ada is vegetarian",
    "Quarterly notes on the beehive project",
    *(f"Garden bed {i} grows {plant}" for i, plant in enumerate(["kale", "leeks", "beans"] * 8)),
]


def load_verifier() -> ModuleType:
    spec = importlib.util.spec_from_file_location("verify_log", VERIFIER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


verify_log = load_verifier()


def run_history(client: httpx.Client) -> None:
    """Writes, a dedup, a supersede, an edit, forget and restore, an erase, recalls."""
    ada, train, locker = write(client, "u-audit", PLAINTEXTS[1], PLAINTEXTS[3], ERASED)
    write(client, "u-audit", PLAINTEXTS[1])  # an exact duplicate
    named = {"content": PLAINTEXTS[2], "supersedes": ada["id"]}  # a named correction
    assert (
        client.post("/memories", json={"containerTag": "u-audit", "memories": [named]}).status_code
        == 200
    )
    write(client, "u-bees", PLAINTEXTS[5])
    patched = client.patch(f"/memories/{train['id']}", json={"content": PLAINTEXTS[4]})
    assert patched.status_code == 200, patched.text
    forget = client.post(f"/memories/{ada['id']}/forget", json={"reason": PLAINTEXTS[6]})
    assert forget.status_code == 200, forget.text
    assert client.post(f"/memories/{ada['id']}/restore").status_code == 200
    assert client.delete(f"/memories/{locker['id']}").status_code == 200
    profile = {"containerTag": "u-audit", "static": [PLAINTEXTS[8]]}
    assert client.put("/profile", json=profile).status_code == 200
    document = {"containerTag": "u-bees", "content": PLAINTEXTS[9]}
    assert client.post("/documents", json=document).status_code == 200
    write(client, "u-garden", *PLAINTEXTS[10:])
    for _ in range(20):
        found = client.post("/search", json={"q": PLAINTEXTS[7], "containerTag": "u-audit"})
        assert found.status_code == 200, found.text
        # /inspect waits for the recall's own commit, so the export below holds it.
        assert client.get(f"/inspect/{found.json()['traceId']}").status_code == 200


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Runtime]]:
    data_dir = tmp_path_factory.mktemp("audit") / "data"
    # Chunks of 3 records, so every export and stream crosses many chunk boundaries.
    with audit_server(data_dir, stream_chunk_records=3) as (client, runtime):
        run_history(client)
        yield client, runtime


@pytest.fixture(scope="module")
def export(server: tuple[httpx.Client, Runtime]) -> bytes:
    client, _ = server
    response = client.get("/log/export")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-ndjson"
    return response.content


def check(data: bytes) -> dict[str, Any]:
    report: dict[str, Any] = verify_log.verify(io.BytesIO(data))
    return report


def test_an_untouched_export_verifies(server: tuple[httpx.Client, Runtime], export: bytes) -> None:
    _, runtime = server
    head = runtime.log.head()
    report = check(export)
    assert report["ok"], report
    assert (report["records"], report["from"], report["to"]) == (head.seq, 1, head.seq)
    assert report["last"] == head.digest
    kinds = {json.loads(line)["kind"] for line in export.splitlines()[1:]}
    assert {
        "memory.written",
        "memory.deduplicated",
        "memory.superseded",
        "memory.edited",
        "chain.forgotten",
        "chain.restored",
        "subject.erased",
        "recall.performed",
        "profile.updated",
        "document.ingested",
    } <= kinds


def test_the_verifier_runs_on_the_standard_library_alone(export: bytes, tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(export)
    # -I -S: no site-packages, no user paths, so nothing but the standard library imports.
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(VERIFIER), str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"ok: {len(export.splitlines()) - 1} records, seq 1..")


def test_the_cli_export_beside_the_live_server_is_the_same(
    server: tuple[httpx.Client, Runtime], export: bytes, tmp_path: Path
) -> None:
    _, runtime = server
    out = tmp_path / "cli.jsonl"
    done = subprocess.run(
        [MNEMOLOG, "export-log", "--data-dir", str(runtime.settings.data_dir), "-o", str(out)],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == export
    to_stdout = subprocess.run(
        [MNEMOLOG, "export-log", "--data-dir", str(runtime.settings.data_dir), "--from", "4"],
        capture_output=True,
        timeout=60,
    )
    assert to_stdout.returncode == 0
    assert to_stdout.stdout.splitlines()[1:] == export.splitlines()[4:]


def test_every_line_carries_the_stored_bytes_and_never_plaintext(
    server: tuple[httpx.Client, Runtime], export: bytes
) -> None:
    _, runtime = server
    lines = [json.loads(line) for line in export.splitlines()[1:]]
    for line, raw in zip(lines, runtime.log.read_raw(), strict=True):
        assert line["record"].encode() == raw.data and line["hash"] == raw.digest
    for text in PLAINTEXTS:
        assert text.encode() not in export, text
    # The erased memory is still there, as the ciphertext it was written as.
    erased = next(line for line in lines if line["kind"] == "subject.erased")["event"]
    written = [
        line["event"]
        for line in lines
        if line["kind"] == "memory.written" and line["event"]["memory_id"] == erased["memory_id"]
    ]
    assert len(written) == 1 and written[0]["content"]["subject"] == erased["subject"]
    assert written[0]["content"]["ct"] and written[0]["content"]["alg"] == "aes-256-gcm"


def test_a_range_verifies_on_its_own(server: tuple[httpx.Client, Runtime], export: bytes) -> None:
    client, _ = server
    full = export.splitlines()
    response = client.get("/log/export", params={"from": 5, "to": 11})
    assert response.status_code == 200
    lines = response.content.splitlines()
    header = json.loads(lines[0])
    assert (header["from"], header["to"]) == (5, 11)
    assert header["prev"] == json.loads(full[4])["hash"]  # record 4, line 5 of the full export
    assert header["last"] == json.loads(full[11])["hash"]
    assert lines[1:] == full[5:12]
    report = check(response.content)
    assert report["ok"] and report["records"] == 7
    one = client.get("/log/export", params={"from": 3, "to": 3}).content
    assert check(one)["ok"] and check(one)["records"] == 1


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"from": "0"}, "from must be at least 1"),
        ({"from": "5", "to": "4"}, "from (5) is after to (4)"),
        ({"to": "100000"}, "past the head"),
        ({"from": "abc"}, "from must be a sequence number"),
        ({"to": "-1"}, "to must be a sequence number"),
        ({"from": "1e3"}, "from must be a sequence number"),
        ({"from": " 7"}, "from must be a sequence number"),
        ({"to": "99999999999999999999999"}, "to must be a sequence number"),
    ],
)
def test_a_bad_range_is_a_400_with_the_error_shape(
    server: tuple[httpx.Client, Runtime], params: dict[str, str], needle: str
) -> None:
    client, _ = server
    response = client.get("/log/export", params=params)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_input" and needle in error["message"]


# --- tampering: every single-line change of a deterministic sample is caught --------------

SAMPLE = 30


def _lines(export: bytes) -> list[bytes]:
    return export.splitlines(keepends=True)


def _flip_bit(line: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(line) - 1)  # not the newline
    return line[:at] + bytes([line[at] ^ 1]) + line[at + 1 :]


def _leaves(obj: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            yield from _leaves(value, (*path, index))
    elif isinstance(obj, str | int | float) and not isinstance(obj, bool):
        yield path


def _change_a_value(line: bytes, rng: random.Random) -> bytes:
    """One field's value changed by one character (or one unit), the line still valid JSON."""
    obj = json.loads(line)
    path = rng.choice(list(_leaves(obj)))
    parent = obj
    for key in path[:-1]:
        parent = parent[key]
    value = parent[path[-1]]
    if isinstance(value, str):
        at = rng.randrange(len(value)) if value else 0
        old = value[at : at + 1]
        parent[path[-1]] = value[:at] + ("0" if old != "0" else "1") + value[at + 1 :]
    else:
        parent[path[-1]] = value + 1
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _forged(line: bytes) -> bytes:
    """A line consistent in itself: its record edited, then re-hashed, the view to match."""
    obj = json.loads(line)
    if "record" not in obj:
        obj["to"] += 1
        return json.dumps(obj, separators=(",", ":")).encode() + b"\n"
    record = json.loads(obj["record"])
    record["actor"]["agent_id"] = "mallory"
    obj["record"] = json.dumps(record, separators=(",", ":"), ensure_ascii=False)
    obj["actor"] = record["actor"]
    obj["hash"] = verify_log.hashlib.sha256(obj["record"].encode()).hexdigest()
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _sample(lines: list[bytes], seed: int) -> list[int]:
    rng = random.Random(seed)
    return sorted(rng.sample(range(len(lines)), min(SAMPLE, len(lines))))


Tamper = Callable[[list[bytes], int, random.Random], list[bytes]]


def _modify_bit(lines: list[bytes], i: int, rng: random.Random) -> list[bytes]:
    return [*lines[:i], _flip_bit(lines[i], rng), *lines[i + 1 :]]


def _modify_value(lines: list[bytes], i: int, rng: random.Random) -> list[bytes]:
    return [*lines[:i], _change_a_value(lines[i], rng), *lines[i + 1 :]]


def _modify_and_rehash(lines: list[bytes], i: int, rng: random.Random) -> list[bytes]:
    return [*lines[:i], _forged(lines[i]), *lines[i + 1 :]]


def _delete(lines: list[bytes], i: int, rng: random.Random) -> list[bytes]:
    return [*lines[:i], *lines[i + 1 :]]


def _insert_duplicate(lines: list[bytes], i: int, rng: random.Random) -> list[bytes]:
    at = rng.randrange(len(lines) + 1)
    return [*lines[:at], lines[i], *lines[at:]]


def _insert_forged(lines: list[bytes], i: int, rng: random.Random) -> list[bytes]:
    at = rng.randrange(len(lines) + 1)
    return [*lines[:at], _forged(lines[i]), *lines[at:]]


def _reorder(lines: list[bytes], i: int, rng: random.Random) -> list[bytes]:
    j = rng.choice([k for k in range(len(lines)) if k != i])
    out = list(lines)
    out[i], out[j] = out[j], out[i]
    return out


@pytest.mark.parametrize(
    "tamper",
    [
        _modify_bit,
        _modify_value,
        _modify_and_rehash,
        _delete,
        _insert_duplicate,
        _insert_forged,
        _reorder,
    ],
)
def test_every_single_line_tampering_is_caught(export: bytes, tamper: Tamper) -> None:
    lines = _lines(export)
    assert len(lines) > SAMPLE
    rng = random.Random(tamper.__name__)
    for i in _sample(lines, seed=len(tamper.__name__)):
        tampered = tamper(lines, i, rng)
        assert tampered != lines
        report = check(b"".join(tampered))
        assert not report["ok"], (tamper.__name__, i)
        assert report["first_bad_line"] >= 1 and report["reason"]
