"""Every HTML page of the server, the dashboard's and the API reference alike, forbids being
framed by another page: with no key live, a click lured inside a frame would act as the user."""

from __future__ import annotations

from pathlib import Path

import httpx

from ..servers import mnemolog_server


def test_no_page_can_be_framed(tmp_path: Path) -> None:
    with (
        mnemolog_server(tmp_path / "data") as (base_url, _),
        httpx.Client(base_url=base_url, timeout=30) as client,
    ):
        pages = [
            client.get("/docs"),
            client.get("/ui/login"),
            client.get("/ui/memories"),
            client.get("/ui/memories/mem_0123456789abcdef"),  # the error page
        ]
        api = client.get("/openapi.json")
    for page in pages:
        assert page.headers["content-type"].startswith("text/html"), page.url
        assert page.headers["x-frame-options"] == "DENY", page.url
        policy = [d.strip() for d in page.headers["content-security-policy"].split(";")]
        assert "frame-ancestors 'none'" in policy, page.url
        assert page.headers["x-content-type-options"] == "nosniff", page.url
    assert [p.status_code for p in pages] == [200, 200, 200, 404]
    assert api.status_code == 200 and api.headers["content-type"] == "application/json"
