"""Fixtures: a scripted upstream and a real mnemolog server in front of it, both on loopback,
and after every test the trace-fidelity check of every turn it made."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mnemolog.api import create_app
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

from ..servers import app_server, replayed_traces
from .fidelity import check_turns
from .scripted import ScriptedUpstream


@dataclass
class Proxy:
    base_url: str
    runtime: Runtime
    upstream: ScriptedUpstream
    data_dir: Path
    checked_seq: int = 0

    @property
    def v1(self) -> str:
        return f"{self.base_url}/v1"


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[ScriptedUpstream, str]]:
    upstream = ScriptedUpstream()
    with app_server(upstream.app) as url:
        yield upstream, url


def start_proxy(
    data_dir: Path, scripted: tuple[ScriptedUpstream, str], **settings: object
) -> Iterator[Proxy]:
    """A mnemolog server on ``data_dir`` in front of the scripted upstream."""
    upstream, upstream_url = scripted
    runtime = Runtime(
        Settings(
            data_dir=data_dir,
            embedder="quality",
            upstream_base_url=f"{upstream_url}/v1",
            **settings,  # type: ignore[arg-type]
        )
    )
    try:
        with app_server(create_app(runtime)) as url:
            yield Proxy(url, runtime, upstream, data_dir)
            # Every recall this server made, re-derived from its log by `mnemolog replay`
            # (beside the running server): none may differ from its record.
            report = replayed_traces(data_dir)
            assert report["differs"] == 0, report
    finally:
        runtime.close()


@pytest.fixture(scope="module")
def proxy(
    tmp_path_factory: pytest.TempPathFactory, scripted: tuple[ScriptedUpstream, str]
) -> Iterator[Proxy]:
    yield from start_proxy(tmp_path_factory.mktemp("proxy") / "data", scripted)


@pytest.fixture(scope="module")
def saving(
    tmp_path_factory: pytest.TempPathFactory, scripted: tuple[ScriptedUpstream, str]
) -> Iterator[Proxy]:
    """A proxy that offers the model ``saveMemory`` too."""
    data_dir = tmp_path_factory.mktemp("saving") / "data"
    yield from start_proxy(data_dir, scripted, proxy_save_tool=True)


# Proxy fixtures whose turns are checked after every test that uses them.
CHECKED = ("proxy", "impatient", "distilling", "saving", "hasty_saver")


@pytest.fixture(autouse=True)
def faithful_traces(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test's turns: the context rebuilt from the trace is what the upstream got."""
    proxies: list[Proxy] = [
        request.getfixturevalue(name) for name in CHECKED if name in request.fixturenames
    ]
    for proxy in proxies:
        proxy.upstream.reset()
    yield
    for proxy in proxies:
        proxy.checked_seq = check_turns(proxy.runtime, proxy.upstream, after_seq=proxy.checked_seq)
