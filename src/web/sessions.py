"""Dashboard sessions: a person logs in with a key once and the browser holds a cookie.

The key itself never leaves the login form: the cookie carries a random session token, kept
only in this process (a restart logs everyone out), that names the caller the key opened.
The cookie is ``HttpOnly`` (no script reads it) and ``SameSite=Strict`` (no other site's page
sends it). A session ends at logout, after ``SESSION_TTL``, or with its key's revocation (the
door asks ``admits`` on every request). Each session has its own CSRF token, which every
dashboard form carries back.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Mapping
from typing import Any

from ..memory.agents import Caller

COOKIE = "mnemolog_session"
SESSION_TTL = 12 * 3600.0  # seconds a session lasts, from its login
MAX_SESSIONS = 1024  # the oldest are dropped past this: a login flood cannot grow memory


class Sessions:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, tuple[Caller, str, float]] = {}
        # Forms of a store with no key live (every loopback caller is the local agent) still
        # carry a token: a page of another site cannot read it.
        self.anonymous_csrf = secrets.token_urlsafe(24)

    def open(self, caller: Caller) -> str:
        """A new session for ``caller``; its token (the cookie's value)."""
        token = secrets.token_urlsafe(32)
        with self._lock:
            if len(self._open) >= MAX_SESSIONS:
                oldest = min(self._open, key=lambda t: self._open[t][2])
                del self._open[oldest]
            self._open[token] = (caller, secrets.token_urlsafe(24), time.monotonic())
        return token

    def close(self, token: str) -> None:
        with self._lock:
            self._open.pop(token, None)

    def caller(self, token: str) -> Caller | None:
        """The caller of a live session, or None."""
        found = self._found(token)
        return None if found is None else found[0]

    def csrf(self, token: str | None) -> str:
        """The CSRF token forms of this session carry (the anonymous one without a session)."""
        found = None if token is None else self._found(token)
        return self.anonymous_csrf if found is None else found[1]

    def csrf_ok(self, token: str | None, presented: str) -> bool:
        return hmac.compare_digest(self.csrf(token).encode(), presented.encode())

    def _found(self, token: str) -> tuple[Caller, str, float] | None:
        with self._lock:
            found = self._open.get(token)
            if found is not None and time.monotonic() - found[2] > SESSION_TTL:
                del self._open[token]
                return None
            return found


def session_token(scope: Mapping[str, Any]) -> str | None:
    """The session cookie's value of a request, if it has exactly one."""
    values: list[str] = []
    for name, raw in scope.get("headers", ()):
        if name != b"cookie":
            continue
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError:
            continue
        for part in text.split(";"):
            key, _, value = part.strip().partition("=")
            if key == COOKIE and value:
                values.append(value)
    return values[0] if len(values) == 1 else None
