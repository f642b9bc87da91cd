"""``/docs``: the API reference, browsable with no network.

Swagger UI is served from its files in the package (``docs_assets/``, see its README), never
from a CDN: FastAPI's own page loads them from one, and shows nothing offline. The page sends
the headers of every page (``web/page_headers.py``): no other page may frame it.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from ..web.page_headers import page_headers

ASSETS = "/docs-assets"


def serve_reference(app: FastAPI) -> None:
    app.mount(ASSETS, StaticFiles(packages=[("mnemolog.api", "docs_assets")]), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def reference() -> HTMLResponse:
        page = get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="mnemolog API",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url="data:,",  # no icon: nothing fetched for one
        )
        page.headers.update(page_headers())
        return page
