"""Rendering a dashboard page: the templates, their escaping, and the headers every page sends.

Every page is HTML rendered here from Jinja2 templates with autoescaping on: a memory's text
is whatever an agent wrote, so it is only ever inserted as text. The Content-Security-Policy
allows this server's own stylesheet and script and nothing else: no inline script, no
``on*=`` handler, no other host.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse
from jinja2 import Environment, PackageLoader, select_autoescape

from .. import __version__
from ..memory import Caller
from ..web.caller import caller_in
from ..web.page_headers import page_headers
from ..web.sessions import Sessions, session_token
from .words import plain, said

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'"
)
SECURITY_HEADERS = page_headers(CSP)  # and framing forbidden, as on every page


def when(instant: int | str | None) -> str:
    """An instant as a person reads it, the one way every page shows one: UTC, to the
    second, labelled (``2026-07-03 12:00:05 UTC``). Given as UTC nanoseconds or as the ISO
    8601 text the API answers."""
    if instant is None or instant == "":
        return ""
    if isinstance(instant, str):
        try:
            parsed = datetime.fromisoformat(instant.replace("Z", "+00:00")).astimezone(UTC)
        except ValueError:
            return instant
        return parsed.strftime("%Y-%m-%d %H:%M:%S UTC")
    return datetime.fromtimestamp(instant / 1e9, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def ms(latency: object) -> str:
    """A latency in milliseconds: one figure, or a recall's stages summed."""
    if isinstance(latency, Mapping):
        latency = sum(float(v) for v in latency.values() if isinstance(v, int | float))
    return f"{float(latency):.1f} ms" if isinstance(latency, int | float) else "-"


def query(base: str, params: Mapping[str, object | None], **changes: object | None) -> str:
    """``base`` with ``params`` as its query, some changed; empty values left out."""
    merged = {**params, **changes}
    kept = {k: str(v) for k, v in merged.items() if v not in (None, "", False)}
    return f"{base}?{urlencode(kept)}" if kept else base


class Pages:
    def __init__(self, sessions: Sessions, *, keys_live: Callable[[], bool]) -> None:
        self.sessions = sessions
        self._keys_live = keys_live
        self._env = Environment(
            loader=PackageLoader("mnemolog.ui", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self._env.filters["when"] = when
        self._env.filters["ms"] = ms
        self._env.filters["said"] = said
        self._env.filters["plain"] = plain
        self._env.globals["query"] = query
        self._env.globals["version"] = __version__

    def render(
        self, request: Request, template: str, status: int = 200, **context: object
    ) -> HTMLResponse:
        caller = caller_in(request.scope)
        token = session_token(request.scope)
        # Fields typed into a form of this page before a login, or refused and shown again.
        given = context.pop("draft", None) or {}
        assert isinstance(given, dict)
        draft = {**self.sessions.take_draft(token, request.url.path), **given}
        body = self._env.get_template(template).render(
            caller=caller,
            csrf=self.sessions.csrf(token),
            logged_in=token is not None and self.sessions.caller(token) is not None,
            keys_live=self._keys_live(),
            path=request.url.path,
            draft=draft,
            **context,
        )
        return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)

    def caller(self, request: Request) -> Caller:
        return caller_in(request.scope)


def see_other(location: str, headers: Mapping[str, str] | None = None) -> RedirectResponse:
    """After a form's action: the page to show (Post/Redirect/Get)."""
    response = RedirectResponse(location, status_code=303, headers=dict(SECURITY_HEADERS))
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response
