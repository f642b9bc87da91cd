"""The client's page stays true: its ``py`` examples (and the README's) run, in order, against
a real server named by ``MNEMOLOG_URL``, as a reader would run them. They are fenced ``py``,
not ``python``: ``tests/test_docs.py`` runs ``python`` blocks with no server."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..servers import mnemolog_server

ROOT = Path(__file__).resolve().parents[2]
_PY_BLOCK = re.compile(r"^```py\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def py_blocks(page: Path) -> list[str]:
    return _PY_BLOCK.findall(page.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with mnemolog_server(tmp_path_factory.mktemp("docs-client") / "data") as (url, _):
        yield url


@pytest.mark.parametrize("page", ["docs/client.md", "README.md"])
def test_the_examples_run_against_a_server(
    page: str, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMOLOG_URL", server)
    monkeypatch.delenv("MNEMOLOG_API_KEY", raising=False)
    blocks = py_blocks(ROOT / page)
    assert blocks, f"{page} has no py example"
    # The page's examples share one client, opened by its first block's ``with``: the rest run
    # inside it, as one session.
    namespace: dict[str, object] = {"__name__": f"docs.{page}"}
    first, *rest = blocks
    exec(compile(first, f"{page} (py block 1)", "exec"), namespace)
    if rest:
        from mnemolog.client import Client

        with Client() as memory:
            namespace["memory"] = memory
            for number, block in enumerate(rest, start=2):
                exec(compile(block, f"{page} (py block {number})", "exec"), namespace)
