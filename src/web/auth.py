"""API keys at the door: once any key is live, every request but ``GET /health`` carries one.

``Authorization: Bearer <key>``, checked in front of every route (after the Host/Origin
guard, before the hot routes and the framework), so a refused request runs nothing and
appends nothing. What the key opens (its agent and containers) is put in the request's scope
state (under ``state_key``) for the shells to stamp and scope their work by. With no key live
the door stays as it was: every loopback caller is the local agent, and an ``Authorization`` header
(the ``openai`` client always sends one) is not looked at.

Malformed, non-ASCII, repeated or huge credentials are a 401 like a wrong key, never an error
of the server.

A person's browser is sent to the dashboard's login page instead, and back afterwards: a page
opened without a live session (none yet, a restart, a stale cookie) is a 303 to the login page
with the page as ``next``; a dashboard form posted without one is a 307 there (the browser
posts the same form to the login page, which keeps what was typed for the form's page), with
the page the form was on (its ``Referer``) as ``next`` and the form's action as ``form``.
``next`` is only ever a path of the dashboard (``safe_next``): no login leads to another host.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode, urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import Unauthorized
from .host_guard import refuse

MAX_HEADER = 1024  # bytes of an Authorization header looked at, at most
_CHALLENGE = ((b"www-authenticate", b'Bearer realm="mnemolog"'),)
# Always open: a supervisor must see whether the server is up, and what auth it asks for; a
# person must reach the dashboard's login page and its stylesheet and script.
OPEN = frozenset(
    {("GET", "/health"), ("HEAD", "/health"), ("GET", "/ui/login"), ("POST", "/ui/login")}
)
OPEN_PREFIX = "/ui/static/"
# A page a person opens in a browser: without a key, it is sent to the login page, not a 401.
PAGES = ("/ui", "/ui/", "/docs")


def is_open(method: str, path: str) -> bool:
    return (method, path) in OPEN or (method in ("GET", "HEAD") and path.startswith(OPEN_PREFIX))


def is_page(method: str, path: str) -> bool:
    return method in ("GET", "HEAD") and (path in ("/", *PAGES) or path.startswith("/ui/"))


def is_form(method: str, path: str) -> bool:
    """A dashboard form's post (every one is under ``/ui/``)."""
    return method == "POST" and path.startswith("/ui/")


MAX_NEXT = 2048  # characters of a page to return to


def safe_next(value: str | None) -> str | None:
    """``value`` if it is a page of this dashboard to return to after a login (``/ui`` or a
    path under it, with its query), else None: never another host (``//host``,
    ``https://host``, a backslash some browsers read as a slash), never the login itself."""
    if not value or len(value) > MAX_NEXT or not value.isprintable() or "\\" in value:
        return None
    parts = urlsplit(value)
    if parts.scheme or parts.netloc or parts.fragment:
        return None
    path = parts.path
    if not (path == "/ui" or path.startswith("/ui/")) or "/../" in f"{path}/":
        return None
    if path in ("/ui/login", "/ui/logout"):
        return None
    return value


def login_location(login_page: str, scope: Scope) -> str:
    """Where a request without a live session is sent: the login page, with the page to come
    back to (and, for a form, its action)."""
    path: str = scope["path"]
    query = scope.get("query_string", b"").decode("latin-1")
    if scope.get("method") == "POST":
        referer = next((v for k, v in scope["headers"] if k == b"referer"), b"")
        came = urlsplit(referer.decode("latin-1"))
        page = safe_next(f"{came.path}?{came.query}" if came.query else came.path)
        params = {"next": page, "form": safe_next(path)}
    else:
        params = {"next": safe_next(f"{path}?{query}" if query else path)}
    kept = {k: v for k, v in params.items() if v}
    return f"{login_page}?{urlencode(kept)}" if kept else login_page


class BearerAuth:
    def __init__(
        self,
        app: ASGIApp,
        *,
        required: Callable[[], bool],
        authenticate: Callable[[str], object | None],
        anonymous: object,
        state_key: str,
        admits: Callable[[object], bool] = lambda caller: True,
        session: Callable[[Scope], object | None] = lambda scope: None,
        login_page: str | None = None,
    ) -> None:
        """``authenticate`` answers the caller a key is (or None); ``anonymous`` is the caller
        of every request while ``required()`` is false. ``admits`` says whether a caller let
        in still would be: a response still streaming (server-sent events, a streamed
        answer) ends at its next chunk once its key is revoked. ``session`` answers the caller
        of a request's dashboard session cookie, asked only when it carries no
        ``Authorization`` header; a page opened without either is sent to ``login_page``."""
        self._app = app
        self._required = required
        self._authenticate = authenticate
        self._anonymous = anonymous
        self._state_key = state_key
        self._admits = admits
        self._session = session
        self._login_page = login_page

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            caller = self._anonymous
            method = scope.get("method", "GET")
            if self._required() and not is_open(method, scope["path"]):
                found = self.caller(scope) if _has_authorization(scope) else self._opened(scope)
                if found is None and self._login_page and scope["type"] == "http":
                    if is_page(method, scope["path"]):
                        await _redirect(send, 303, login_location(self._login_page, scope))
                        return
                    if is_form(method, scope["path"]):
                        # 307: the browser posts the form on to the login page, which keeps
                        # what was typed (nothing is run, and nothing runs there unasked).
                        await _redirect(send, 307, login_location(self._login_page, scope))
                        return
                if found is None:
                    refusal = Unauthorized(
                        "this server needs an API key: Authorization: Bearer <key>"
                    )
                    await refuse(scope, send, refusal, _CHALLENGE)
                    return
                caller = found
            scope.setdefault("state", {})[self._state_key] = caller
            if scope["type"] == "http":
                send = self._ending_when_refused(caller, send)
        await self._app(scope, receive, send)

    def _ending_when_refused(self, caller: object, send: Send) -> Send:
        """``send``, but a response body still streaming when ``caller`` is no longer let in
        ends there: its last chunk is empty, and what the app sends after it is dropped
        (the client, seeing the end, disconnects, and the app stops)."""
        ended = False

        async def guarded(message: Message) -> None:
            nonlocal ended
            if ended:
                return
            streaming = message["type"] == "http.response.body" and message.get("more_body")
            if streaming and not self._admits(caller):
                ended = True
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            await send(message)

        return guarded

    def _opened(self, scope: Scope) -> object | None:
        """The caller of the request's dashboard session, while its key is still live (a key
        presented in the header was just checked: this one was checked at login)."""
        found = self._session(scope)
        return found if found is not None and self._admits(found) else None

    def caller(self, scope: Scope) -> object | None:
        """The caller the request's one Bearer key opens, or None."""
        values = [v for k, v in scope["headers"] if k == b"authorization"]
        if len(values) != 1 or len(values[0]) > MAX_HEADER:
            return None
        try:
            text = values[0].decode("ascii")
        except UnicodeDecodeError:
            return None
        scheme, _, token = text.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return self._authenticate(token.strip())


def _has_authorization(scope: Scope) -> bool:
    return any(name == b"authorization" for name, _ in scope["headers"])


async def _redirect(send: Send, status: int, location: str) -> None:
    headers = [(b"location", location.encode("ascii")), (b"content-length", b"0")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
