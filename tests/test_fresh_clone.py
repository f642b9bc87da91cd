"""A newcomer's first hour, as printed: the repository cloned into an empty directory, the
README's first command run with an empty home directory, then every command of the README and
of docs/integrations.md run as written, the MCP snippet launched as a client launches it.

The clone is of this working tree (tracked files and new ones not ignored), so what is tested
is what is here. pip's download cache is the only thing shared with this machine's home: it
saves the network, not any step (``make serve`` installs every package into a new venv, and
the first start distils the embedder into the empty home's cache).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters

from .mcp.conftest import ok, session
from .servers import free_port

ROOT = Path(__file__).resolve().parent.parent
_SH_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.MULTILINE | re.DOTALL)
# What a fresh install may take: pip with a warm cache, the reranker's wheel, the first
# start's distillation, on a busy 2-core machine.
_HEALTHY_WITHIN = 900.0

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed"),
    pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed"),
]


def commands(page: Path) -> list[str]:
    """The shell commands of a page's ``sh`` blocks, one per logical line, comments dropped."""
    found: list[str] = []
    for block in _SH_BLOCK.findall(page.read_text(encoding="utf-8")):
        for line in block.replace("\\\n", " ").splitlines():
            command = re.sub(r"\s+#.*$", "", line).strip()
            if command:
                found.append(command)
    return found


def clone(into: Path) -> None:
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(into)], check=True)
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (entry.decode() for entry in listed)):
        source = ROOT / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
        elif (into / name).exists():
            (into / name).unlink()  # deleted here, not yet in a commit


def test_from_a_fresh_clone_every_documented_command_works(tmp_path: Path) -> None:
    repo, home = tmp_path / "mnemolog", tmp_path / "home"
    home.mkdir()
    clone(repo)
    port = free_port()
    python_dir = Path(os.path.realpath(sys._base_executable)).parent
    env = {
        "HOME": str(home),
        "PATH": f"{home}/.local/bin:{python_dir}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "MNEMOLOG_PORT": str(port),
        "PIP_CACHE_DIR": str(Path.home() / ".cache" / "pip"),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    readme = commands(repo / "README.md")
    assert readme[:2] == ["make serve", "make test"]
    started = time.monotonic()
    said = tmp_path / "make-serve.log"
    with said.open("wb") as out:
        server = subprocess.Popen(
            ["bash", "-c", readme[0]],
            cwd=repo,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            assert server.poll() is None, said.read_text()[-4000:]
            assert time.monotonic() - started < _HEALTHY_WITHIN, "never healthy"
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(1)
        healthy_after = time.monotonic() - started
        venv = subprocess.run(["du", "-sm", str(repo / ".venv")], capture_output=True, text=True)
        size = venv.stdout.split()[0]
        print(f"fresh clone to healthy: {healthy_after:.0f} s; serving venv {size} MB")
        assert (home / ".local" / "bin" / "mnemolog").resolve() == repo / ".venv/bin/mnemolog"
        # The first start built the fast tier into the empty home's cache, saying how far.
        log = said.read_text()
        assert "mnemolog: distilling" in log and (home / ".cache" / "mnemolog").is_dir(), log
        assert f"data dir    {home}/.local/share/mnemolog" in log

        work = tmp_path / "work"  # a directory of the user's own, not the clone
        work.mkdir()
        (work / "facts.jsonl").write_text(
            '{"content": "John drinks his coffee black", "timestamp": 1767225600}\n'
            '"John rides a red bicycle to work"\n'
        )
        for command in readme[2:]:
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", command.replace(":8080", f":{port}")],
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        with httpx.Client(base_url=base) as client:
            page = client.get("/memories", params={"containerTag": "user_123"}).json()
            found = client.post(
                "/search", json={"q": "what theme does John like", "containerTag": "user_123"}
            ).json()
        assert {m["content"] for m in page["memories"]} >= {
            "John prefers dark mode",
            "John drinks his coffee black",
            "John rides a red bicycle to work",
        }
        assert found["results"][0]["content"] == "John prefers dark mode"

        # The README's Python example, with the clone's interpreter.
        example = re.search(r"^```py\n(.*?)^```$", (repo / "README.md").read_text(), re.M | re.S)
        assert example is not None
        ran = subprocess.run(
            [str(repo / ".venv/bin/python"), "-c", example.group(1)],
            cwd=work,
            env={**env, "MNEMOLOG_URL": base},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert ran.returncode == 0 and ran.stdout.strip() == "John prefers dark mode", ran.stderr

        _integrations(repo, work, env)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)


def _integrations(repo: Path, work: Path, env: dict[str, str]) -> None:
    """The integrations page's commands that run here (no Claude, Docker or llama-server on
    this machine), and the snippet they print launched as its client launches it."""
    ran = 0
    for command in commands(repo / "docs" / "integrations.md"):
        if not command.startswith("mnemolog mcp-config"):
            continue
        done = subprocess.run(
            ["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        ran += 1
        if "claude-desktop" not in command:
            continue
        snippet = json.loads(done.stdout)["mcpServers"]["mnemolog"]
        # A desktop app's environment: no shell PATH, only its own HOME.
        bare = {"HOME": env["HOME"], "PATH": "/usr/bin:/bin", "MNEMOLOG_PORT": env["MNEMOLOG_PORT"]}
        launched = StdioServerParameters(
            command=snippet["command"], args=snippet["args"], env={**bare, **snippet.get("env", {})}
        )

        async def search(client: Client) -> dict[str, Any]:
            return await ok(client, "search_memories", query="coffee", containerTag="user_123")

        # Relayed to the running server: it finds what the README's commands wrote.
        found = session(launched, search)
        assert "John drinks his coffee black" in json.dumps(found)
    assert ran >= 2
