"""``/docs``: the API reference, browsable with no network.

Swagger UI is served from its files in the package (``docs_assets/``, see its README), never
from a CDN: FastAPI's own page loads them from one, and shows nothing offline.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs-assets"


def serve_reference(app: FastAPI) -> None:
    app.mount(ASSETS, StaticFiles(packages=[("mnemolog.api", "docs_assets")]), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def reference() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="mnemolog API",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url="data:,",  # no icon: nothing fetched for one
        )
