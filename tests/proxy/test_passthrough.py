"""Every ``/v1/*`` route but chat completions goes to the upstream unchanged: the real
``openai`` client's embeddings, a streamed legacy completion, the query string, and the
client's own key kept on this side."""

from __future__ import annotations

import httpx
import openai
import pytest

from ..servers import raw_request
from .conftest import Proxy
from .scripted import SESSION_COOKIE


def test_embeddings_pass_through_unchanged(proxy: Proxy) -> None:
    proxy.upstream.reset()
    with openai.OpenAI(base_url=proxy.v1, api_key="client-own-key", max_retries=0) as client:
        made = client.embeddings.create(model="m", input=["Ada", "collects maps"])
    assert [d.embedding for d in made.data] == [[3.0, 0.5, -0.25], [13.0, 0.5, -0.25]]
    (sent,) = [r for r in proxy.upstream.received if r.path == "/v1/embeddings"]
    assert sent.json["input"] == ["Ada", "collects maps"] and sent.json["model"] == "m"
    # The upstream sees this server's key (none is configured here), never the client's.
    assert "client-own-key" not in str(sent.headers)
    assert proxy.upstream.chats() == []  # no memory round, nothing recorded as a turn


def test_a_streamed_route_streams_through(proxy: Proxy) -> None:
    proxy.upstream.reset()
    head = proxy.runtime.log.head().seq
    chunks: list[str] = []
    with httpx.stream(
        "POST",
        f"{proxy.v1}/completions?api-version=2024-01",
        json={"model": "m", "prompt": "Tell", "stream": True},
        timeout=30,
    ) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        for line in answer.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                chunks.append(line)
    assert len(chunks) == 4 and '"text": " time"' in chunks[-1]
    (sent,) = [r for r in proxy.upstream.received if r.path.startswith("/v1/completions")]
    assert sent.path == "/v1/completions?api-version=2024-01" and sent.completed
    assert proxy.runtime.log.head().seq == head  # passed through: no event


def test_an_unknown_upstream_route_answers_as_the_upstream_does(proxy: Proxy) -> None:
    answer = httpx.get(f"{proxy.v1}/no/such/route")
    assert answer.status_code == 404  # the upstream's own answer, passed back
    # A path that would climb out of the upstream's base (sent encoded, as a client could).
    refused = httpx.get(f"{proxy.v1}/a/%2e%2e/models")
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "invalid_input"


def test_a_cookie_the_upstream_sets_is_never_sent_again(proxy: Proxy) -> None:
    """The upstream client is shared by every caller: a cookie one call was answered with
    would go with every later call of every key, chat or passthrough."""
    proxy.upstream.reset()
    first = httpx.get(f"{proxy.v1}/dashboard/session")
    assert first.status_code == 200 and "set-cookie" not in first.headers
    with openai.OpenAI(base_url=proxy.v1, api_key="k", max_retries=0) as client:
        client.embeddings.create(model="m", input="Ada")
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        client.models.list()
    httpx.get(f"{proxy.v1}/dashboard/session")
    later = proxy.upstream.received[1:]
    assert [r.path for r in later] == [
        "/v1/embeddings",
        "/v1/chat/completions",
        "/v1/models",
        "/v1/dashboard/session",
    ]
    assert all(SESSION_COOKIE not in str(r.headers) for r in later)
    assert all("cookie" not in r.headers for r in later)


@pytest.mark.parametrize(
    "target",
    [
        "/v1/%252e%252e/%252e%252e/secret",  # decoded once here, once more upstream
        "/v1/models%3Fx=1%23frag",  # a query and a fragment of the path's own
        "/v1/%2e%2e/secret",
        "/v1/a/./models",
        "/v1/a//models",
        "/v1/a%2fb/models",
        "/v1/..%5c..%5csecret",
        "/v1/..\\..\\secret",
        "/v1/models;x=1",
        "/v1/a%20b",
        "/v1/%00",  # control bytes: no URL the upstream client would send
        "/v1/models%01",
        "/v1/x%7f",
        "/v1/x%0d%0aHost:%20evil",
        "/v1/caf%c3%a9",
    ],
)
def test_a_path_that_is_not_plainly_a_route_is_refused(proxy: Proxy, target: str) -> None:
    proxy.upstream.reset()
    status, body = raw_request(proxy.base_url, target)
    error = httpx.Response(status, content=body).json()["error"]
    # A line break matches no route of this server at all (404); the rest is refused 400.
    assert (status, error["code"]) in ((400, "invalid_input"), (404, "not_found")), body
    assert proxy.upstream.received == []  # nothing went upstream


def test_a_route_with_ids_passes_as_written(proxy: Proxy) -> None:
    proxy.upstream.reset()
    status, _ = raw_request(proxy.base_url, "/v1/files/file-Ab_9.x~1:cancel?limit=2&after=a%2Fb")
    assert status == 404  # the upstream's own answer: it has no such route
    (sent,) = proxy.upstream.received
    assert sent.path == "/v1/files/file-Ab_9.x~1:cancel?limit=2&after=a%2Fb"
