"""``mnemolog import FILE`` over a real server: each format, a file cut mid-line, and a run
killed halfway then run again (nothing duplicated, nothing lost)."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .servers import MNEMOLOG, mnemolog_server

ENV = {"MNEMOLOG_EMBEDDER": "fast"}


def command(data_dir: Path, *args: str) -> list[str]:
    return [MNEMOLOG, "import", *args, "--data-dir", str(data_dir)]


def run(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(data_dir, *args),
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **ENV},
        check=False,
    )


def report(data_dir: Path, *args: str, code: int = 0) -> dict[str, object]:
    done = run(data_dir, *args, "--json")
    assert done.returncode == code, done.stdout + done.stderr
    found: dict[str, object] = json.loads(done.stdout)
    return found


def contents(base_url: str, tag: str) -> list[str]:
    """Every live memory's text in a container."""
    found: list[str] = []
    with httpx.Client(base_url=base_url) as client:
        while True:
            page = client.get(
                "/memories", params={"containerTag": tag, "limit": 500, "offset": len(found)}
            ).json()
            found += [m["content"] for m in page["memories"]]
            if len(found) >= page["total"]:
                return found


def facts(n: int, start: int = 0) -> list[str]:
    """Distinct facts, none a restatement of another (the write decision keeps them all)."""
    return [
        f"Locker {i} holds parcel {i * 7919 % 100_003:06d} for tenant {i % 97}"
        for i in range(start, start + n)
    ]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    data_dir = tmp_path_factory.mktemp("import") / "data"
    with mnemolog_server(data_dir, ENV) as (base_url, _):
        yield data_dir, base_url


def test_jsonl_cut_mid_line_imports_every_whole_line_and_names_the_cut_one(
    served: tuple[Path, str], tmp_path: Path
) -> None:
    data_dir, base_url = served
    texts = facts(30)
    lines = [
        json.dumps({"content": t, "timestamp": 1_700_000_000 + n}) for n, t in enumerate(texts)
    ]
    path = tmp_path / "facts.jsonl"
    path.write_text("\n".join(lines) + '\n{"content": "Locker 99 holds parc')
    got = report(data_dir, str(path), "-c", "jsonl", code=1)
    assert (got["read"], got["created"], got["deduplicated"]) == (31, 30, 0)
    assert [f["line"] for f in got["failed"]] == [31]  # type: ignore[union-attr]
    assert sorted(contents(base_url, "jsonl")) == sorted(texts)
    with httpx.Client(base_url=base_url) as client:
        page = client.get("/memories", params={"containerTag": "jsonl", "limit": 500}).json()
    assert {m["observedAt"] for m in page["memories"]} >= {"2023-11-14T22:13:20+00:00"}

    # The file completed later: the rest comes in, nothing twice.
    path.write_text("\n".join([*lines, json.dumps({"content": "Locker 99 holds a bike"})]) + "\n")
    again = report(data_dir, str(path), "-c", "jsonl")
    # Its one batch is not the first run's (it holds one more fact): the write decision
    # knows the 30 it holds already as exact duplicates.
    assert (again["failed"], again["created"], again["deduplicated"]) == ([], 1, 30)
    assert Counter(contents(base_url, "jsonl")) == Counter([*texts, "Locker 99 holds a bike"])


def test_csv_with_its_other_columns_as_metadata(served: tuple[Path, str], tmp_path: Path) -> None:
    data_dir, base_url = served
    path = tmp_path / "notes.csv"
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["text", "created_at", "source", "user_id"])
        out.writerow(["Ines, the new hire, starts on Monday", "2025-03-01T09:00:00Z", "hr", "csv"])
        out.writerow(["The office wifi password rotates monthly", "", "it", "csv"])
        out.writerow(["", "", "", ""])
        out.writerow(["", "2025-03-02", "empty text", "csv"])
    got = report(data_dir, str(path), code=1)  # the container comes from user_id
    assert got["created"] == 2 and [f["line"] for f in got["failed"]] == [5]  # type: ignore[union-attr]
    with httpx.Client(base_url=base_url) as client:
        page = client.get("/memories", params={"containerTag": "csv"}).json()
    by_text = {m["content"]: m for m in page["memories"]}
    assert by_text["Ines, the new hire, starts on Monday"]["metadata"] == {"source": "hr"}
    assert by_text["Ines, the new hire, starts on Monday"]["observedAt"] == "2025-03-01T09:00:00Z"


def test_a_mem0_export(served: tuple[Path, str], tmp_path: Path) -> None:
    data_dir, base_url = served
    # What Mem0's MemoryClient.get_all() answers (v1.1 output format), saved as JSON.
    exported = {
        "results": [
            {
                "id": "a9b4e0c2-1b2c-4f4e-9d59-0d1ff2d0a111",
                "memory": "Prefers vegetarian food",
                "hash": "5d41402abc4b2a76b9719d911017c592",
                "metadata": {"source": "chat"},
                "categories": ["food", "preferences"],
                "created_at": "2024-07-20T01:30:45.123456-07:00",
                "updated_at": "2024-07-21T10:00:00-07:00",
                "user_id": "mem0-alex",
            },
            {
                "id": "c1d2e3f4-0000-4000-8000-000000000002",
                "memory": "Is allergic to peanuts",
                "user_id": "mem0-alex",
                "created_at": "2024-07-22T08:00:00-07:00",
            },
        ]
    }
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(exported))
    got = report(data_dir, str(path))
    assert (got["format"], got["created"], got["failed"]) == ("mem0", 2, [])
    with httpx.Client(base_url=base_url) as client:
        page = client.get("/memories", params={"containerTag": "mem0-alex"}).json()
    veg = next(m for m in page["memories"] if m["content"] == "Prefers vegetarian food")
    assert veg["metadata"] == {
        "source": "chat",
        "categories": "food,preferences",
        "sourceId": "a9b4e0c2-1b2c-4f4e-9d59-0d1ff2d0a111",
    }
    assert veg["observedAt"] == "2024-07-20T01:30:45.123456-07:00"


def test_a_bellamente_export_goes_to_post_import(served: tuple[Path, str], tmp_path: Path) -> None:
    data_dir, base_url = served
    with mnemolog_server(tmp_path / "other", ENV) as (other_url, _):
        httpx.post(
            f"{other_url}/memories",
            json={"containerTag": "moved", "memories": [{"content": "Quill writes in ink"}]},
        )
        exported = httpx.get(f"{other_url}/export").content
    path = tmp_path / "export.json"
    path.write_bytes(exported)
    first = run(data_dir, str(path))
    assert first.returncode == 0, first.stderr
    assert "1 imported" in first.stdout
    assert "1 skipped" in run(data_dir, str(path)).stdout  # a second import is a no-op
    assert contents(base_url, "moved") == ["Quill writes in ink"]


def test_killed_halfway_then_run_again_nothing_twice_nothing_lost(
    served: tuple[Path, str], tmp_path: Path
) -> None:
    data_dir, base_url = served
    texts = facts(3000, start=1000)
    path = tmp_path / "big.jsonl"
    path.write_text("".join(json.dumps({"content": t}) + "\n" for t in texts))
    proc = subprocess.Popen(
        command(data_dir, str(path), "-c", "big", "--batch", "100"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **ENV},
    )
    deadline = time.monotonic() + 120
    with httpx.Client(base_url=base_url) as client:
        while client.get("/stats", params={"containerTag": "big"}).json()["memories"]["live"] < 600:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # A batch the killed run had sent whole is still written by the server: count once settled.
    # One batch of 100 can take over half a second on a loaded machine, so the count must hold
    # for two seconds.
    landed, steady = len(contents(base_url, "big")), 0
    while steady < 4:
        time.sleep(0.5)
        settled = len(contents(base_url, "big"))
        steady = steady + 1 if settled == landed else 0
        landed = settled
    assert 600 <= landed < 3000

    again = report(data_dir, str(path), "-c", "big", "--batch", "100")
    assert again["failed"] == [] and again["created"] == 3000
    # The batches the killed run had written were answered from its record, not written again.
    assert landed - 100 <= int(again["replayed"]) <= landed  # type: ignore[call-overload]
    assert Counter(contents(base_url, "big")) == Counter(texts)


def test_a_line_that_cannot_be_read_fails_alone_with_its_number_and_reason(
    served: tuple[Path, str], tmp_path: Path
) -> None:
    data_dir, base_url = served
    deep = "[" * 1100 + "]" * 1100
    lines = [
        json.dumps({"content": "Otters hold hands while they sleep"}),
        '{"content": "A fact nested past any parser", "metadata": ' + deep + "}",
        '{"content": "A fact after the end of time", "observedAt": 1e400}',
        '{"content": "A fact at no time", "timestamp": NaN}',
        '{"content": "A fact in a far future", "timestamp": 1' + "0" * 30 + "}",
        '{"content": "A fact of too many digits", "timestamp": ' + "9" * 5000 + "}",
        '{"content": "A fact of an infinite tag", "metadata": {"n": -Infinity}}',
        json.dumps({"content": "The lighthouse was lit in 1969", "timestamp": -86_400}),
        json.dumps({"content": "Herons nest in the reed beds"}),
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(lines) + "\n")
    got = report(data_dir, str(path), "-c", "hostile-jsonl", code=1)
    failed = {f["line"]: f["reason"] for f in got["failed"]}  # type: ignore[attr-defined]
    assert sorted(failed) == [2, 3, 4, 5, 6, 7]
    assert "deep" in failed[2]
    assert "out of range" in failed[3] and "out of range" in failed[5]
    assert "NaN" in failed[4] and "Infinity" in failed[7]
    assert "digits" in failed[6]
    assert got["created"] == 3
    assert sorted(contents(base_url, "hostile-jsonl")) == [
        "Herons nest in the reed beds",
        "Otters hold hands while they sleep",
        "The lighthouse was lit in 1969",
    ]
    with httpx.Client(base_url=base_url) as client:
        page = client.get("/memories", params={"containerTag": "hostile-jsonl"}).json()
    lit = next(m for m in page["memories"] if "1969" in m["content"])
    assert lit["observedAt"] == "1969-12-31T00:00:00+00:00"


def test_a_csv_date_out_of_any_calendar_fails_alone(
    served: tuple[Path, str], tmp_path: Path
) -> None:
    data_dir, base_url = served
    path = tmp_path / "dates.csv"
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["text", "date"])
        out.writerow(["Gulls follow the ferry", "1700000000"])
        out.writerow(["A row past the calendar", "1e300"])
        out.writerow(["A row at no time", "nan"])
        out.writerow(["A row at infinity", "-inf"])
        out.writerow(["A row before year one", "-1e12"])
        out.writerow(["Terns dive for sprats", "2025-03-01T09:00:00Z"])
    got = report(data_dir, str(path), "-c", "hostile-csv", code=1)
    failed = {f["line"]: f["reason"] for f in got["failed"]}  # type: ignore[attr-defined]
    assert sorted(failed) == [3, 4, 5, 6]
    assert all("out of range" in reason for reason in failed.values()), failed
    assert sorted(contents(base_url, "hostile-csv")) == [
        "Gulls follow the ferry",
        "Terns dive for sprats",
    ]


def test_a_json_file_nested_past_any_parser_is_named_without_a_traceback(
    tmp_path: Path,
) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"results": [' + "[" * 1100 + "]" * 1100 + "]}")
    done = run(tmp_path / "data", str(path), "-c", "deep")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "too deep" in done.stderr
