"""``POST /import`` under hostile input, over a real server: a body no parser can read is
refused whole with a 4xx and appends nothing; a document item over the body limit of
``POST /documents`` fails alone, as ``POST /documents`` would refuse it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from .conftest import Store, open_store
from .test_export_import import chain, envelope, head

MAX_BODY = 4096  # the store's max_body_bytes: a small limit keeps the oversized document small


@pytest.fixture
def small(tmp_path: Path) -> Iterator[Store]:
    with open_store(tmp_path / "small", max_body_bytes=MAX_BODY) as opened:
        yield opened


def post_raw(store: Store, body: bytes) -> Any:
    return store.client.post("/import", content=body, headers={"content-type": "application/json"})


def test_an_item_nested_past_any_parser_s_depth_is_a_400_and_appends_nothing(
    store: Store,
) -> None:
    before = head(store)
    deep = b"[" * 1100 + b"]" * 1100
    item = b'{"id": "src_deep", "containerTag": "imp", "metadata": ' + deep + b"}"
    body = b'{"format": "bellamente-export", "version": 1, "memories": [' + item + b"]}"
    response = post_raw(store, body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "malformed_body" and "deep" in error["message"]
    assert head(store) == before


def test_an_item_that_is_not_utf8_is_a_400_and_appends_nothing(store: Store) -> None:
    before = head(store)
    good = msgspec.json.encode(chain("src_a", ("2024-01-01T00:00:00Z", None)))
    bad = b'{"id": "src_\xff\xfe", "containerTag": "imp"}'
    body = b'{"format": "bellamente-export", "version": 1, "memories": [%s, %s]}' % (good, bad)
    response = post_raw(store, body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "malformed_body" and "UTF-8" in error["message"]
    assert head(store) == before


def test_a_document_over_the_body_limit_fails_alone_as_post_documents_refuses_it(
    small: Store,
) -> None:
    big = {"containerTag": "imp", "title": "Manual", "content": "Descale often. " * 400}
    assert small.client.post("/documents", json=big).status_code == 413
    file = envelope(chain("src_a", ("2024-01-01T00:00:00Z", None)))
    file["documents"] = [
        {"id": "doc_big", **big},
        {"id": "doc_small", "containerTag": "imp", "content": "Heat up for 25 seconds."},
    ]
    response = small.import_(file)
    assert response.status_code == 200, response.text
    report = response.json()
    big_result, small_result = report["documents"]
    assert big_result["status"] == "failed" and big_result["reason"] == "payload_too_large"
    assert str(MAX_BODY) in big_result["message"]
    assert small_result["status"] == "imported"
    assert [m["status"] for m in report["memories"]] == ["imported"]
    listed = small.client.get("/documents", params={"containerTag": "imp"}).json()
    assert [d["title"] for d in listed["documents"]] == [None]
