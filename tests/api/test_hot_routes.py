"""POST /memories and POST /search are served beneath the framework (api/hot.py): over a real
server they must refuse bad input exactly as every other route does, change nothing when they
refuse, and still be described by the OpenAPI document."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from ..servers import mnemolog_server

HOT = ["/memories", "/search"]
GOOD = {
    "/memories": b'{"containerTag": "hot", "memories": [{"content": "Ada keeps bees"}]}',
    "/search": b'{"q": "bees", "containerTag": "hot"}',
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    data_dir = tmp_path_factory.mktemp("hot") / "data"
    with (
        mnemolog_server(data_dir, env={"MNEMOLOG_MAX_BODY_BYTES": "2048"}) as (base_url, _),
        httpx.Client(base_url=base_url) as http,
    ):
        yield http


def state(client: httpx.Client) -> tuple[int, int]:
    """(memories listed, log head): what a refused request must leave as it was."""
    total = client.get("/memories").json()["total"]
    head = client.get("/health").json()["log"]["head"]
    return total, head


def post(client: httpx.Client, path: str, body: bytes, **headers: str) -> httpx.Response:
    return client.post(path, content=body, headers={"content-type": "application/json", **headers})


# Each fault on a body that is otherwise valid for its route: ``{}`` stands for the rest of it.
FAULTS = [
    ('{"containerTag": "hot", {}', 400, "malformed_body"),
    ('{"containerTag": "hot", "containerTag": "cold", {}}', 400, "malformed_body"),
    ('{"containerTag": "hot\\u0000", {}}', 400, "malformed_body"),
    ('{"containerTag": NaN, {}}', 400, "malformed_body"),
    ('{"containerTag": "hot", "unknown": 1, {}}', 400, "invalid_input"),
    ('{"containerTag": 5, {}}', 400, "invalid_input"),
]
REST = {
    "/memories": '"memories": [{"content": "Ada keeps wasps"}]',
    "/search": '"q": "wasps"',
}


@pytest.mark.parametrize("path", HOT)
@pytest.mark.parametrize(("template", "status", "code"), FAULTS)
def test_bad_bodies_are_refused_with_the_error_shape_and_change_nothing(
    client: httpx.Client, path: str, template: str, status: int, code: str
) -> None:
    before = state(client)
    response = post(client, path, template.replace("{}", REST[path]).encode())
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["code"] == code
    assert state(client) == before


@pytest.mark.parametrize("path", HOT)
def test_a_body_that_is_not_json_is_415(client: httpx.Client, path: str) -> None:
    before = state(client)
    response = client.post(path, content=b"q=bees", headers={"content-type": "text/plain"})
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"
    assert state(client) == before


@pytest.mark.parametrize("path", HOT)
def test_oversize_bodies_are_413_declared_or_streamed(client: httpx.Client, path: str) -> None:
    before = state(client)
    big = b'{"containerTag": "hot", "memories": [{"content": "' + b"x" * 3000 + b'"}]}'
    assert post(client, path, big).status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit holds while streaming
        yield big[:1500]
        yield big[1500:]

    response = client.post(path, content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert state(client) == before


def test_good_bodies_are_answered_and_traced(client: httpx.Client) -> None:
    written = post(client, "/memories", GOOD["/memories"])
    assert written.status_code == 200
    assert written.json()["memories"][0]["status"] in ("created", "deduplicated")
    found = post(client, "/search", GOOD["/search"])
    assert found.status_code == 200
    body = found.json()
    assert body["results"][0]["content"] == "Ada keeps bees"
    assert found.headers["x-mnemolog-trace-id"] == body["traceId"]
    assert found.headers["x-bella-trace-id"] == body["traceId"]


def test_other_methods_and_paths_still_reach_the_framework(client: httpx.Client) -> None:
    assert client.put("/search", content=GOOD["/search"]).status_code == 405
    assert client.post("/search/", content=GOOD["/search"]).status_code in (307, 404)
    paths = client.get("/openapi.json").json()["paths"]
    assert "post" in paths["/memories"] and "post" in paths["/search"]
