"""A store whose log is in PostgreSQL (``MNEMOLOG_LOG_URL``): a real server writes, corrects and
searches; the records are in the database, append-only; an export from it verifies; a restart
and a rebuild serve the same; a second node on the same log serves the same; an LMDB log moved over
serves on; a node SIGKILLed under load loses and duplicates nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from .nodes import KeyedWriters, env_for, mnemolog, serve_on
from .servers import MNEMOLOG, free_port, mnemolog_server, wait_healthy

pytestmark = pytest.mark.slow

VERIFY = Path(__file__).resolve().parent.parent / "tools" / "verify_log.py"


def served(client: httpx.Client) -> dict[str, Any]:
    found = client.post("/search", json={"q": "Where does Ana live?", "containerTag": "team"})
    listed = client.get("/memories", params={"containerTag": "team", "limit": 100})
    return {
        "search": [r["content"] for r in found.json()["results"]],
        "memories": sorted(m["content"] for m in listed.json()["memories"]),
    }


def test_a_store_on_postgresql_serves_verifies_rebuilds_and_shares_its_log(
    tmp_path: Path, log_url: str
) -> None:
    data_dir = tmp_path / "node-a"
    with (
        mnemolog_server(data_dir, env_for(log_url)) as (base_url, _),
        httpx.Client(base_url=base_url, timeout=30) as client,
    ):
        facts = ["Ana lives in Lisbon.", "Ana's team ships on Thursdays.", "Bo likes tea."]
        written = client.post(
            "/memories", json={"containerTag": "team", "memories": [{"content": f} for f in facts]}
        )
        assert written.status_code == 200, written.text
        lisbon = written.json()["memories"][0]["id"]
        corrected = client.post(
            "/memories",
            json={
                "containerTag": "team",
                "memories": [{"content": "Ana lives in Porto.", "supersedes": lisbon}],
            },
        )
        assert corrected.status_code == 200, corrected.text
        before = served(client)
        assert before["search"][0] == "Ana lives in Porto."
        assert "Ana lives in Lisbon." not in before["memories"]

        # The records are in the database, and it keeps them append-only.
        with psycopg.connect(log_url, autocommit=True) as conn:
            (count,) = conn.execute("SELECT count(*) FROM mnemolog.log").fetchone()  # type: ignore[misc]
            (head,) = conn.execute("SELECT seq FROM mnemolog.head").fetchone()  # type: ignore[misc]
            assert count == head >= 4
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                conn.execute("DELETE FROM mnemolog.log WHERE seq = 1")
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                conn.execute("UPDATE mnemolog.log SET data = data WHERE seq = 1")

        # A second node on the same log, with a data dir of its own, serves the same.
        with (
            mnemolog_server(tmp_path / "node-b", env_for(log_url)) as (second_url, _),
            httpx.Client(base_url=second_url, timeout=30) as second,
        ):
            written = client.get("/stats").json()["log"]["head"]
            assert second.get("/digest", params={"minSeq": written}).json()["seq"] >= written
            assert served(second) == before
        head = client.get("/stats").json()["log"]["head"]  # its searches were recorded too

        # An export read from the database beside the running node verifies, as an LMDB one.
        export = tmp_path / "log.jsonl"
        exported = mnemolog(log_url, "export-log", "--data-dir", str(data_dir), "-o", str(export))
        assert exported.returncode == 0, exported.stderr
        lines = export.read_text().splitlines()
        assert [json.loads(line)["seq"] for line in lines[1:]] == list(range(1, head + 1))
        outside = subprocess.run(
            [sys.executable, str(VERIFY), str(export)], capture_output=True, text=True
        )
        assert outside.returncode == 0, outside.stdout + outside.stderr

    # Restarted on its data dir, then with its projections rebuilt from the database.
    with (
        mnemolog_server(data_dir, env_for(log_url)) as (base_url, _),
        httpx.Client(base_url=base_url, timeout=30) as client,
    ):
        assert served(client) == before
    rebuilt = mnemolog(log_url, "rebuild", "--data-dir", str(data_dir))
    assert rebuilt.returncode == 0, rebuilt.stderr
    with (
        mnemolog_server(data_dir, env_for(log_url)) as (base_url, _),
        httpx.Client(base_url=base_url, timeout=30) as client,
    ):
        assert served(client) == before
    # Nothing of the log was written to the data dir.
    assert not (data_dir / "log" / "data.mdb").exists()


def test_migrate_log_copies_an_lmdb_log_that_then_serves_from_postgresql(
    tmp_path: Path, log_url: str
) -> None:
    data_dir = tmp_path / "store"
    lmdb_only = {"MNEMOLOG_EMBEDDER": "fast", "MNEMOLOG_LOG_URL": ""}
    body = {
        "containerTag": "team",
        "memories": [{"content": "Ana lives in Lisbon."}, {"content": "Bo likes tea."}],
    }
    with (
        mnemolog_server(data_dir, lmdb_only) as (base_url, _),
        httpx.Client(base_url=base_url, timeout=30) as client,
    ):
        first = client.post("/memories", json=body, headers={"Idempotency-Key": "move-1"})
        assert first.status_code == 200, first.text
        lisbon = first.json()["memories"][0]["id"]
        client.post(
            "/memories",
            json={
                "containerTag": "team",
                "memories": [{"content": "Ana lives in Porto.", "supersedes": lisbon}],
            },
        ).raise_for_status()
        before = served(client)
    lmdb_export = tmp_path / "lmdb.jsonl"
    done = subprocess.run(
        [MNEMOLOG, "export-log", "--data-dir", str(data_dir), "-o", str(lmdb_export)],
        env={**os.environ, **lmdb_only},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr

    moved = mnemolog(log_url, "migrate-log", "--to", log_url, "--data-dir", str(data_dir))
    assert moved.returncode == 0, moved.stderr
    assert "copied" in moved.stdout
    again = mnemolog(log_url, "migrate-log", "--to", log_url, "--data-dir", str(data_dir))
    assert again.returncode == 0 and "already holds this log" in again.stdout

    # The same records, byte for byte: the exports from both backends are the same lines.
    pg_export = tmp_path / "pg.jsonl"
    done = mnemolog(log_url, "export-log", "--data-dir", str(data_dir), "-o", str(pg_export))
    assert done.returncode == 0, done.stderr
    assert pg_export.read_text().splitlines()[1:] == lmdb_export.read_text().splitlines()[1:]

    with (
        mnemolog_server(data_dir, env_for(log_url)) as (base_url, _),
        httpx.Client(base_url=base_url, timeout=30) as client,
    ):
        assert served(client) == before
        # A write retried across the move is answered from the copied key, not written twice.
        retried = client.post("/memories", json=body, headers={"Idempotency-Key": "move-1"})
        assert retried.status_code == 200 and retried.json() == first.json()
        assert served(client) == before

    # Into a database that holds another log: refused, and it is left as it was.
    done = mnemolog(log_url, "export-log", "--data-dir", str(data_dir), "-o", str(pg_export))
    held = pg_export.read_text().splitlines()[1:]
    other = tmp_path / "other"
    with (
        mnemolog_server(other, lmdb_only) as (base_url, _),
        httpx.Client(base_url=base_url, timeout=30) as client,
    ):
        client.post("/memories", json=body).raise_for_status()
    refused = mnemolog(log_url, "migrate-log", "--to", log_url, "--data-dir", str(other))
    assert refused.returncode == 2 and "holds another log" in refused.stderr
    done = mnemolog(log_url, "export-log", "--data-dir", str(data_dir), "-o", str(pg_export))
    assert done.returncode == 0 and pg_export.read_text().splitlines()[1:] == held


def test_a_node_killed_mid_write_loses_and_duplicates_nothing_and_catches_up(
    tmp_path: Path, log_url: str
) -> None:
    data_dir, port = tmp_path / "node", free_port()
    base_url = f"http://127.0.0.1:{port}"
    node = serve_on(data_dir, port, log_url)
    try:
        wait_healthy(base_url, node)
        with KeyedWriters(base_url) as writers:
            time.sleep(1.5)
            node.send_signal(signal.SIGKILL)
            node.wait(timeout=30)
            node = serve_on(data_dir, port, log_url)  # the same data dir and log
            wait_healthy(base_url, node)
            time.sleep(1.0)
        assert writers.retries > 0 and len(writers.acknowledged) > 20
        acked = writers.acknowledged
        assert {m["status"] for m in acked.values()} == {"created"}
        ids = {m["id"] for m in acked.values()}
        assert len(ids) == len(acked)
        with httpx.Client(base_url=base_url, timeout=30) as client:
            listed: set[str] = set()
            while True:
                page = client.get(
                    "/memories",
                    params={"containerTag": "team", "limit": 500, "offset": len(listed)},
                ).json()
                listed |= {m["id"] for m in page["memories"]}
                if len(listed) >= page["total"] or not page["memories"]:
                    break
        assert listed == ids  # every acknowledged write served once, nothing else
    finally:
        node.terminate()
        node.wait(timeout=30)
    exported = mnemolog(log_url, "export-log", "--data-dir", str(data_dir))
    assert exported.returncode == 0, exported.stderr
    kinds = [json.loads(line)["kind"] for line in exported.stdout.splitlines()[1:]]
    assert kinds.count("memory.written") == len(acked)


def test_verify_log_checks_the_log_in_postgresql_and_finds_a_tampered_record(
    tmp_path: Path, log_url: str
) -> None:
    from mnemolog.eventlog.postgres_log import PostgresEventLog

    from .factories import signal_draft

    with PostgresEventLog(log_url) as log:
        for n in range(5):
            log.append([signal_draft(f"record {n}")])
        head = log.head()
    data_dir = str(tmp_path / "node")
    ok = mnemolog(log_url, "verify-log", "--data-dir", data_dir)
    assert ok.returncode == 0, ok.stderr
    assert f"ok: 5 records, head 5 {head.digest}" in ok.stdout
    # Someone with the database's owner role goes around the trigger and changes a record.
    with psycopg.connect(log_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE mnemolog.log DISABLE TRIGGER append_only")
        conn.execute(
            "UPDATE mnemolog.log SET data = overlay(data placing '\\x00'::bytea from 60) "
            "WHERE seq = 3"
        )
    bad = mnemolog(log_url, "verify-log", "--data-dir", data_dir)
    assert bad.returncode == 1
    assert "first bad seq 3" in bad.stderr
