"""Dashboard sessions: a person logs in with a key once and the browser holds a cookie.

The key itself never leaves the login form: the cookie carries a random session token, kept
only in this process (a restart logs everyone out), that names the caller the key opened.
Every cookie the dashboard sets, at login and at logout, has the same attributes: ``HttpOnly``
(no script reads it), ``SameSite=Strict`` (no other site's page sends it), ``Path=/``, and
``Secure`` when the page was served over HTTPS. A session ends at logout, after
``SESSION_TTL``, or with its key's revocation (the door asks ``admits`` on every request).
Each session has its own CSRF token, which every dashboard form carries back.

A form posted after its session ended (a restart, a stale cookie) is kept across the login
that follows: the new session holds it (``keep_draft``) until the form's page is rendered
again (``take_draft``), which fills the form with it; nothing is run unasked.

The table is bounded twice, so that no key can log out anyone but itself: each agent keeps
its ``MAX_SESSIONS_PER_AGENT`` latest sessions (its oldest makes way for a new one), and past
``MAX_SESSIONS`` in all, expired sessions are dropped, and if none has expired a login is
refused (``SessionsFull``) rather than ending another agent's session.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from ..errors import SessionsFull
from ..memory.agents import Caller

COOKIE = "mnemolog_session"
SESSION_TTL = 12 * 3600.0  # seconds a session lasts, from its login
MAX_SESSIONS = 1024  # live sessions in all: a login flood cannot grow memory
MAX_SESSIONS_PER_AGENT = 16  # an agent's own: a person's browsers and devices, with room


class _Session(NamedTuple):
    caller: Caller
    csrf: str
    opened: float  # monotonic seconds


class Draft(NamedTuple):
    """What was typed into a form whose session had ended: its page, its action, its fields."""

    page: str
    action: str
    fields: dict[str, str]


class Sessions:
    def __init__(
        self,
        *,
        capacity: int = MAX_SESSIONS,
        per_agent: int = MAX_SESSIONS_PER_AGENT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lock = threading.Lock()
        # In order of login (a dict keeps insertion order): the first is the oldest.
        self._open: dict[str, _Session] = {}
        self._drafts: dict[str, Draft] = {}  # by session token: at most one each
        self._capacity = capacity
        self._per_agent = per_agent
        self._clock = clock
        # Forms of a store with no key live (every loopback caller is the local agent) still
        # carry a token: a page of another site cannot read it.
        self.anonymous_csrf = secrets.token_urlsafe(24)

    def open(self, caller: Caller) -> str:
        """A new session for ``caller``; its token (the cookie's value)."""
        token = secrets.token_urlsafe(32)
        with self._lock:
            now = self._clock()
            own = [t for t, s in self._open.items() if s.caller.agent_id == caller.agent_id]
            for oldest in own[: max(0, len(own) - self._per_agent + 1)]:
                del self._open[oldest]
                self._drafts.pop(oldest, None)
            if len(self._open) >= self._capacity:
                self._drop_expired(now)
            if len(self._open) >= self._capacity:
                raise SessionsFull(
                    f"the dashboard holds {self._capacity} live sessions, the most it keeps,"
                    " all of other agents: log in again once one has ended"
                )
            self._open[token] = _Session(caller, secrets.token_urlsafe(24), now)
        return token

    def close(self, token: str) -> None:
        with self._lock:
            self._open.pop(token, None)
            self._drafts.pop(token, None)

    def keep_draft(self, token: str, draft: Draft) -> None:
        """Hold a form's typed fields for a live session, until its page is shown."""
        with self._lock:
            if token in self._open:
                self._drafts[token] = draft

    def take_draft(self, token: str | None, page: str) -> dict[str, dict[str, str]]:
        """The fields held for a form of ``page`` (by its action), handed over once."""
        if token is None:
            return {}
        with self._lock:
            found = self._drafts.get(token)
            if found is None or found.page.split("?")[0] != page:
                return {}
            del self._drafts[token]
            return {found.action: found.fields}

    def caller(self, token: str) -> Caller | None:
        """The caller of a live session, or None."""
        found = self._found(token)
        return None if found is None else found.caller

    def csrf(self, token: str | None) -> str:
        """The CSRF token forms of this session carry (the anonymous one without a session)."""
        found = None if token is None else self._found(token)
        return self.anonymous_csrf if found is None else found.csrf

    def csrf_ok(self, token: str | None, presented: str) -> bool:
        return hmac.compare_digest(self.csrf(token).encode(), presented.encode())

    def _found(self, token: str) -> _Session | None:
        with self._lock:
            found = self._open.get(token)
            if found is not None and self._clock() - found.opened > SESSION_TTL:
                del self._open[token]
                self._drafts.pop(token, None)
                return None
            return found

    def _drop_expired(self, now: float) -> None:
        for token in [t for t, s in self._open.items() if now - s.opened > SESSION_TTL]:
            del self._open[token]
            self._drafts.pop(token, None)


def session_cookie(token: str, *, secure: bool) -> str:
    """The ``Set-Cookie`` of a login (``token``) or of a logout (``""``: the cookie ends now).
    Both carry the same attributes, so no browser keeps a laxer copy of the other."""
    parts = [f"{COOKIE}={token}", "Path=/", "HttpOnly", "SameSite=Strict"]
    parts.append(f"Max-Age={int(SESSION_TTL) if token else 0}")
    if secure:
        parts.append("Secure")
    return "; ".join(parts)


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
