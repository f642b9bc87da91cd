"""The dashboard's routes: its pages, its login, its static files, and its error page."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles

from ..runtime import Runtime
from ..web.sessions import Sessions, session_cookie, session_token
from .agents import agent_pages
from .asof import asof_pages
from .audit import audit_pages
from .forms import read_form
from .memories import memory_pages
from .pages import Pages, see_other
from .traces import trace_pages


def ui_routes(app: FastAPI, runtime: Runtime, sessions: Sessions) -> Pages:
    """Mount the dashboard on ``app``; the pages (their error page is the app's for /ui)."""
    core = runtime.core
    pages = Pages(sessions, keys_live=lambda: core.agents.required)
    app.mount("/ui/static", StaticFiles(packages=[("mnemolog.ui", "static")]), name="ui-static")
    router = APIRouter(include_in_schema=False)

    @router.get("/")
    def root() -> Response:
        return see_other("/ui")

    @router.get("/ui")
    def home() -> Response:
        return see_other("/ui/memories")

    @router.get("/ui/login")
    def login_page(request: Request) -> Response:
        return pages.render(request, "login.html", failed=False)

    @router.post("/ui/login")
    async def login(request: Request) -> Response:
        key = (await read_form(request, sessions)).get("key", "").strip()
        caller = core.agents.authenticate(key) if core.agents.required and key else None
        if caller is None:
            return pages.render(request, "login.html", status=401, failed=True)
        cookie = session_cookie(sessions.open(caller), secure=request.url.scheme == "https")
        return see_other("/ui/memories", {"set-cookie": cookie})

    @router.post("/ui/logout")
    async def logout(request: Request) -> Response:
        await read_form(request, sessions)
        token = session_token(request.scope)
        if token is not None:
            sessions.close(token)
        cookie = session_cookie("", secure=request.url.scheme == "https")
        return see_other("/ui/login", {"set-cookie": cookie})

    for part in (
        router,
        memory_pages(core, pages),
        trace_pages(runtime, pages),
        asof_pages(runtime, pages),
        agent_pages(core, pages, runtime.settings.trust_threshold),
        audit_pages(runtime, pages),
    ):
        app.include_router(part)
    return pages


def error_page(pages: Pages, request: Request, status: int, code: str, message: str) -> Response:
    return pages.render(
        request, "error.html", status=status, http_status=status, code=code, message=message
    )
