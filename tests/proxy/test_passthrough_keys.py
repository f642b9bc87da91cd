"""The passthrough spends the server's upstream key on routes that belong to no container, so a
key scoped to containers is refused it unless the setting allows it; its chat turns, in its
own containers, go through as before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from ..servers import add_key
from .conftest import Proxy, scripted, start_proxy
from .scripted import ScriptedUpstream

__all__ = ["scripted"]  # the scripted upstream fixture, used through the proxies here


def keyed_proxy(
    data_dir: Path, scripted: tuple[ScriptedUpstream, str], **settings: object
) -> Iterator[tuple[Proxy, dict[str, str]]]:
    keys = {"bob": add_key(data_dir, "bob", "b1"), "root": add_key(data_dir, "root")}
    for proxy in start_proxy(data_dir, scripted, **settings):
        yield proxy, keys


@pytest.fixture(scope="module")
def keyed(
    tmp_path_factory: pytest.TempPathFactory, scripted: tuple[ScriptedUpstream, str]
) -> Iterator[tuple[Proxy, dict[str, str]]]:
    yield from keyed_proxy(tmp_path_factory.mktemp("keyed") / "data", scripted)


@pytest.fixture(scope="module")
def lenient(
    tmp_path_factory: pytest.TempPathFactory, scripted: tuple[ScriptedUpstream, str]
) -> Iterator[tuple[Proxy, dict[str, str]]]:
    data_dir = tmp_path_factory.mktemp("lenient") / "data"
    yield from keyed_proxy(data_dir, scripted, proxy_passthrough_scoped=True)


def embed(proxy: Proxy, key: str) -> Any:
    with openai.OpenAI(base_url=proxy.v1, api_key=key, max_retries=0) as client:
        return client.embeddings.create(model="m", input="Ada")


def test_a_scoped_key_is_refused_the_passthrough(keyed: tuple[Proxy, dict[str, str]]) -> None:
    proxy, keys = keyed
    proxy.upstream.reset()
    with pytest.raises(openai.PermissionDeniedError) as refused:
        embed(proxy, keys["bob"])
    assert refused.value.status_code == 403
    assert refused.value.body["code"] == "container_forbidden"  # type: ignore[index]
    streamed = httpx.post(
        f"{proxy.v1}/completions",
        json={"model": "m", "prompt": "Tell", "stream": True},
        headers={"authorization": f"Bearer {keys['bob']}"},
    )
    assert streamed.status_code == 403
    assert proxy.upstream.received == []  # nothing was sent upstream
    # Its own turns and the models list are its to use; a key that reaches every container
    # may pass through.
    with openai.OpenAI(base_url=proxy.v1, api_key=keys["bob"], max_retries=0) as client:
        answer = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"x-mnemolog-container-tag": "b1"},
        )
        assert answer.choices[0].message.content
        assert [m.id for m in client.models.list()]
    assert len(embed(proxy, keys["root"]).data) == 1


def test_the_setting_lets_a_scoped_key_pass_through(
    lenient: tuple[Proxy, dict[str, str]],
) -> None:
    proxy, keys = lenient
    proxy.upstream.reset()
    assert len(embed(proxy, keys["bob"]).data) == 1
    assert [r.path for r in proxy.upstream.received] == ["/v1/embeddings"]
