"""The dashboard's routes: its pages, its login, its static files, and its error page."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles

from ..errors import CsrfRefused
from ..runtime import Runtime
from ..web.auth import MAX_NEXT, safe_next
from ..web.sessions import Draft, Sessions, session_cookie, session_token
from .agents import agent_pages
from .ask import ask_pages
from .asof import asof_pages
from .audit import audit_pages
from .forms import read_fields, read_form
from .memories import memory_pages
from .pages import Pages, see_other
from .traces import trace_pages

# A page to return to after a login (``web/auth.py``'s ``safe_next`` decides whether it may).
Next = Annotated[str | None, Query(max_length=MAX_NEXT)]


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
    def login_page(request: Request, next: Next = None) -> Response:
        return pages.render(request, "login.html", failed=False, next=safe_next(next))

    @router.post("/ui/login")
    async def login(request: Request, next: Next = None, form: Next = None) -> Response:
        fields = await read_fields(request)
        if "key" not in fields:
            # A form whose session had ended, posted on here by the door (a 307): shown back
            # as hidden fields of the login form, never acted on.
            typed = {k: v for k, v in fields.items() if k not in ("csrf", "next", "form")}
            return pages.render(
                request,
                "login.html",
                status=401,
                failed=False,
                ended=True,
                next=safe_next(next),
                form=safe_next(form) if typed else None,
                typed=typed,
            )
        if not sessions.csrf_ok(session_token(request.scope), fields.pop("csrf", "")):
            raise CsrfRefused("this form is stale or not from this dashboard: reload the page")
        key = fields.get("key", "").strip()
        target = safe_next(fields.get("next")) or "/ui/memories"
        caller = core.agents.authenticate(key) if core.agents.required and key else None
        if caller is None:
            return pages.render(
                request, "login.html", status=401, failed=True, next=safe_next(fields.get("next"))
            )
        token = sessions.open(caller)
        action = safe_next(fields.get("form"))
        typed = {k[6:]: v for k, v in fields.items() if k.startswith("typed.")}
        if action is not None and typed:
            sessions.keep_draft(token, Draft(page=target, action=action, fields=typed))
        cookie = session_cookie(token, secure=request.url.scheme == "https")
        return see_other(target, {"set-cookie": cookie})

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
        ask_pages(core, pages),
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
