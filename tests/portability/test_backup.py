"""`mnemolog backup` beside a live server and `mnemolog restore`: nothing acknowledged is lost."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from pathlib import Path

import httpx

from ..servers import MNEMOLOG, mnemolog_server

ENV = {"MNEMOLOG_EMBEDDER": "fast"}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MNEMOLOG, *args], capture_output=True, text=True, env={**os.environ, **ENV}, timeout=120
    )


class Writer(threading.Thread):
    """Writes one memory per request until stopped; keeps what was acknowledged, in order."""

    def __init__(self, base_url: str) -> None:
        super().__init__(daemon=True)
        self.base_url = base_url
        self.acked: list[tuple[str, str, str]] = []  # (memory id, version id, content)
        self.stop = threading.Event()
        self.progress = threading.Condition()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with httpx.Client(base_url=self.base_url, timeout=30) as client:
                n = 0
                while not self.stop.is_set():
                    content = f"Fact {n}: the writer thread counted {n * 7919 % 10007} apples"
                    response = client.post(
                        "/memories",
                        json={"containerTag": "w", "memories": [{"content": content}]},
                    )
                    response.raise_for_status()
                    (memory,) = response.json()["memories"]
                    with self.progress:
                        self.acked.append((memory["id"], memory["versionId"], content))
                        self.progress.notify_all()
                    n += 1
        except BaseException as exc:
            self.error = exc
            with self.progress:
                self.progress.notify_all()

    def wait_for(self, count: int) -> list[tuple[str, str, str]]:
        with self.progress:
            assert self.progress.wait_for(
                lambda: len(self.acked) >= count or self.error is not None, timeout=60
            )
            assert self.error is None, self.error
            return list(self.acked)


def test_backup_while_writing_then_restore_keeps_every_acknowledged_write(
    tmp_path: Path,
) -> None:
    data_dir, dest, restored = tmp_path / "data", tmp_path / "backup", tmp_path / "restored"
    with mnemolog_server(data_dir, ENV) as (base_url, _):
        writer = Writer(base_url)
        writer.start()
        try:
            before = writer.wait_for(20)
            done = cli("backup", "--data-dir", str(data_dir), str(dest))
            after = writer.wait_for(len(writer.acked) + 10)  # the server kept writing
        finally:
            writer.stop.set()
            writer.join(timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("backed up: log head ")
        steps = ["copying the log (", "copying the key store (", "verifying the copied log"]
        said = [x.removeprefix("backup: ") for x in done.stderr.splitlines()]
        assert [next(x for x in said if x.startswith(s)) for s in steps], done.stderr
        assert sorted(p.name for p in dest.iterdir()) == ["keys", "log", "mnemolog-backup.json"]
        again = cli("backup", "--data-dir", str(data_dir), str(dest))
        assert again.returncode == 2 and "not empty" in again.stderr

    done = cli("restore", "--data-dir", str(restored), str(dest))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("restored: ") and "projections rebuilt" in done.stdout
    assert "restore: verifying the copied log" in done.stderr
    assert re.search(r"restore: rebuilding  \[#+\] 100%  (\d+)/\1 records", done.stderr)
    verified = cli("verify-log", "--data-dir", str(restored))
    assert verified.returncode == 0 and verified.stdout.startswith("ok: ")
    refused = cli("restore", "--data-dir", str(restored), str(dest))
    assert refused.returncode == 2 and "not empty" in refused.stderr
    not_a_backup = cli("restore", "--data-dir", str(tmp_path / "empty"), str(data_dir))
    assert not_a_backup.returncode == 2 and "not a mnemolog backup" in not_a_backup.stderr

    with mnemolog_server(restored, ENV) as (base_url, _), httpx.Client(base_url=base_url) as c:
        for memory_id, version_id, content in before:
            versions = c.get(f"/memories/{memory_id}").json()["versions"]
            assert {"versionId": version_id, "content": content}.items() <= next(
                v for v in versions if v["versionId"] == version_id
            ).items()
        found = c.post("/search", json={"q": before[0][2], "containerTag": "w"}).json()
        assert found["results"], found
        # Writes made after the backup are not in it, and nothing else is either.
        restored_total = c.get("/memories", params={"containerTag": "w"}).json()["total"]
    chains_written = len({memory_id for memory_id, _, _ in after})
    assert restored_total <= chains_written
