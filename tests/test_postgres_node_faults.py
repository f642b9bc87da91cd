"""Two nodes on one PostgreSQL log under faults, with keyed writers on both all along: one node
SIGKILLed mid-write (the other keeps serving, the killed one catches up on restart), every
connection to the database killed, then PostgreSQL itself restarted. A writer retries a
failed request with its Idempotency-Key, as a client retries a 503 or a refused connection.

Afterwards no acknowledged write is lost or written twice: both nodes serve exactly the
acknowledged memories, agree on the digest of their read models at one seq, and the log holds
one ``memory.written`` per acknowledged write."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import httpx
import psycopg
import pytest

from .nodes import KeyedWriters, listed, mnemolog, serve_on
from .postgres import Server, restart
from .servers import free_port, wait_healthy

pytestmark = pytest.mark.slow


def acknowledged_count(writers: KeyedWriters) -> int:
    with writers._lock:
        return len(writers.acknowledged)


def test_two_nodes_lose_and_duplicate_nothing_under_kills_and_a_database_restart(
    tmp_path: Path, own_postgres: Server
) -> None:
    assert own_postgres.trial is not None
    log_url = own_postgres.url
    ports = [free_port(), free_port()]
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    procs = [serve_on(tmp_path / f"node-{n}", ports[n], log_url) for n in range(2)]
    try:
        for url, proc in zip(urls, procs, strict=True):
            wait_healthy(url, proc)
        with (
            KeyedWriters(urls[0], 2, prefix="a") as on_a,
            KeyedWriters(urls[1], 2, prefix="b") as on_b,
        ):
            time.sleep(1.5)
            procs[0].send_signal(signal.SIGKILL)
            procs[0].wait(timeout=30)
            # The other node keeps taking writes while the first is down.
            before = acknowledged_count(on_b)
            time.sleep(1.5)
            assert acknowledged_count(on_b) > before
            procs[0] = serve_on(tmp_path / "node-0", ports[0], log_url)
            wait_healthy(urls[0], procs[0])
            time.sleep(1.0)
            with psycopg.connect(log_url, autocommit=True) as conn:
                (killed,) = conn.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE application_name LIKE 'mnemolog%%'"
                ).fetchone()  # type: ignore[misc]
            assert killed >= 4  # each node's log writer, reader and listeners
            time.sleep(1.0)
            restart(own_postgres.trial)
            time.sleep(2.0)
        acked = {**on_a.acknowledged, **on_b.acknowledged}
        assert on_a.retries > 0 and on_b.retries > 0
        assert acknowledged_count(on_a) > 10 and acknowledged_count(on_b) > 10
        assert {m["status"] for m in acked.values()} == {"created"}
        ids = {m["id"] for m in acked.values()}
        assert len(ids) == len(acked)

        head = max(httpx.get(f"{url}/stats").json()["log"]["head"] for url in urls)
        digests = []
        for url in urls:
            with httpx.Client(base_url=url, timeout=60) as client:
                assert set(listed(client, "team", head)) == ids  # each once, nothing else
                digests.append(client.get("/digest", params={"minSeq": head}).json())
        assert digests[0] == digests[1]
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)
    exported = mnemolog(log_url, "export-log", "--data-dir", str(tmp_path / "node-1"))
    assert exported.returncode == 0, exported.stderr
    kinds = [json.loads(line)["kind"] for line in exported.stdout.splitlines()[1:]]
    assert kinds.count("memory.written") == len(acked)
