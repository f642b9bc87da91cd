"""Strict bodies over a real server: every bad input is a 4xx with one error shape."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import msgspec
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from mnemolog.api.errors import install_error_handlers
from mnemolog.web.request_body import read_json

from ..servers import app_server


class Note(msgspec.Struct, forbid_unknown_fields=True):
    text: str
    score: float = 0.0
    tags: list[str] = msgspec.field(default_factory=list)


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    app = FastAPI()
    install_error_handlers(app)

    @app.post("/notes")
    async def post_note(request: Request) -> JSONResponse:
        note = await read_json(request, Note, max_bytes=1024)
        return JSONResponse(msgspec.to_builtins(note))

    with app_server(app) as url:
        yield url


def post(base_url: str, body: bytes, content_type: str = "application/json") -> httpx.Response:
    return httpx.post(f"{base_url}/notes", content=body, headers={"content-type": content_type})


def test_a_good_body_is_decoded(base_url: str) -> None:
    response = post(base_url, b'{"text": "hi \\u00e9\\n", "score": 1.5, "tags": ["a"]}')
    assert response.status_code == 200
    assert response.json() == {"text": "hi \u00e9\n", "score": 1.5, "tags": ["a"]}


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b'{"text": ', 400, "malformed_body"),
        (b'{"text": "a", "score": NaN}', 400, "malformed_body"),
        (b'{"text": "a", "score": Infinity}', 400, "malformed_body"),
        (b'{"text": "a", "score": 1e999}', 400, "invalid_input"),
        (b'{"text": "\\ud800"}', 400, "malformed_body"),
        (b'{"text": "a", "text": "b"}', 400, "malformed_body"),
        (b'{"text": "a", "extra": 1}', 400, "invalid_input"),
        (b'{"text": 5}', 400, "invalid_input"),
        (b'{"text": "a\\u0000b"}', 400, "malformed_body"),
        (b'{"text": "a", "tags": ["ok", "\\u0007"]}', 400, "malformed_body"),
        (b"[]", 400, "invalid_input"),
        (b"", 400, "malformed_body"),
    ],
    ids=[
        "truncated",
        "nan",
        "infinity",
        "out-of-range",
        "lone-surrogate",
        "duplicate-key",
        "unknown-field",
        "wrong-type",
        "nul",
        "bell-in-list",
        "not-an-object",
        "empty",
    ],
)
def test_bad_bodies_are_refused(base_url: str, body: bytes, status: int, code: str) -> None:
    response = post(base_url, body)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code


def test_a_body_that_is_not_json_is_415(base_url: str) -> None:
    response = post(base_url, b"text=hi", "application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"


def test_oversize_bodies_are_413_declared_or_streamed(base_url: str) -> None:
    big = b'{"text": "' + b"x" * 2000 + b'"}'
    assert post(base_url, big).status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit holds while streaming
        yield big[:1000]
        yield big[1000:]

    response = httpx.post(
        f"{base_url}/notes", content=chunks(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
