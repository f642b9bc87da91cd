"""The client raises what the server raised: each error answer becomes its class of
``mnemolog.errors`` by the body's code (by the status for a code it does not know), with the
status and body attached; a server that is not there is named, with what to do."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator

import pytest

from mnemolog import errors
from mnemolog.client import AsyncClient, Client, RequestFailed, ServerUnreachable, status_of
from mnemolog.client._calls import Routes, decode
from mnemolog.client._errors import error_classes, error_from

from ..servers import add_key, free_port, mnemolog_server


@pytest.fixture(scope="module")
def open_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with mnemolog_server(tmp_path_factory.mktemp("open") / "data") as (url, _):
        yield url


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    data_dir = tmp_path_factory.mktemp("keyed") / "data"
    token = add_key(data_dir, "agent-a")
    with mnemolog_server(data_dir) as (url, _):
        yield url, token


@pytest.fixture(autouse=True)
def no_key_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MNEMOLOG_API_KEY", raising=False)
    monkeypatch.delenv("MNEMOLOG_URL", raising=False)


def test_an_unknown_id_raises_not_found_with_status_and_body(open_url: str) -> None:
    with Client(open_url) as c, pytest.raises(errors.NotFound) as raised:
        c.get("mem_unknown")
    assert status_of(raised.value) == 404
    assert raised.value.body["error"]["code"] == "not_found"  # type: ignore[attr-defined]
    assert "mem_unknown" in str(raised.value)


def test_a_blank_content_raises_invalid_input(open_url: str) -> None:
    with Client(open_url) as c, pytest.raises(errors.InvalidInput) as raised:
        c.add("   ", "errors")
    assert type(raised.value) is errors.InvalidInput and status_of(raised.value) == 400
    assert "content" in str(raised.value)


def test_keys_live_a_client_without_one_is_unauthorized(
    keyed: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, token = keyed
    with Client(url) as anonymous:
        assert anonymous.health().auth == "required"  # /health needs no key
        with pytest.raises(errors.Unauthorized) as raised:
            anonymous.add("a fact", "keyed")
    assert status_of(raised.value) == 401
    with Client(url, api_key="mnl_wrong_key") as wrong, pytest.raises(errors.Unauthorized):
        wrong.list("keyed")
    with Client(url, api_key=token) as agent:
        assert agent.add("a fact", "keyed").memories[0].status == "created"
    monkeypatch.setenv("MNEMOLOG_API_KEY", token)
    with Client(url) as from_env:
        assert from_env.list("keyed").total == 1


def test_a_closed_port_raises_server_unreachable_naming_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with Client(url, timeout=5) as c, pytest.raises(ServerUnreachable) as raised:
        c.health()
    message = str(raised.value)
    assert url in message and "mnemolog serve" in message and "MNEMOLOG_URL" in message
    assert isinstance(raised.value, errors.MnemologError) and raised.value.url == url
    assert "GET /health" in message

    async def scenario() -> None:
        async with AsyncClient(url, timeout=5) as c:
            await c.search("anything")

    with pytest.raises(ServerUnreachable):
        asyncio.run(scenario())


def test_every_class_of_the_tree_is_found_by_its_code() -> None:
    tree = [
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, errors.MnemologError)
    ]
    known = error_classes()
    for cls in tree:
        assert known[cls.code] is cls


@pytest.mark.parametrize(
    ("status", "content", "expected"),
    [
        (409, b'{"error":{"code":"version_conflict","message":"at version 2"}}', "VersionConflict"),
        (400, b'{"error":{"code":"brand_new_code","message":"m"}}', "InvalidInput"),
        (405, b'{"error":{"code":"method_not_allowed","message":"m"}}', "InvalidInput"),
        (401, b"{}", "Unauthorized"),
        (403, b"<html>no</html>", "RequestRefused"),
        (404, b"not here", "NotFound"),
        (502, b"Bad Gateway", "MnemologError"),
        (500, b'{"error":{"code":"corrupt_record","message":"record 3: bad"}}', "CorruptRecord"),
    ],
)
def test_an_error_answer_maps_by_code_then_by_status(
    status: int, content: bytes, expected: str
) -> None:
    exc = error_from(status, content)
    assert type(exc).__name__ == expected and status_of(exc) == status
    assert str(exc)  # a message, from the body or the status


def test_an_upstream_rejection_keeps_its_status() -> None:
    exc = error_from(429, b'{"error":{"code":"upstream_rejected","message":"slow down"}}')
    assert isinstance(exc, errors.UpstreamRejected) and exc.upstream_status == 429


def test_an_answer_that_is_not_the_expected_json_raises_request_failed() -> None:
    with pytest.raises(RequestFailed) as raised:
        decode(Routes.health(), 200, b"<html>a proxy's page</html>", "http://x/health", {})
    assert "http://x/health" in str(raised.value)


def test_a_503_health_answers_or_raises_by_its_body() -> None:
    stopped = b'{"ok":false,"log":{"head":7,"writable":false,"error":{"code":"disk_full"}}}'
    health = decode(Routes.health(), 503, stopped, "http://x/health", {})
    assert not health.ok and health.log is not None and not health.log.writable
    with pytest.raises(errors.StorageFailed):
        decode(Routes.health(), 503, b'{"error":{"code":"storage_failed","message":"m"}}', "", {})
