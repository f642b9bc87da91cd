"""Error answers turned back into the exceptions the server raised (``mnemolog.errors``).

The server answers every error as ``{"error": {"code", "message"}}`` (``web/statuses.py``); the
code names the class. The map from code to class is walked from ``MnemologError`` at each
error, so a class added to the tree is known without a list here to keep in step.
"""

from __future__ import annotations

from typing import Any

import httpx
import msgspec

from ..errors import (
    InvalidInput,
    MnemologError,
    NotFound,
    RequestRefused,
    Unauthorized,
    UpstreamRejected,
)


class ServerUnreachable(MnemologError):
    """No connection could be made to the server (it is not running, or the URL is wrong)."""

    code = "server_unreachable"

    def __init__(self, url: str, request: str) -> None:
        super().__init__(
            f"no mnemolog server answers at {url} ({request}): start one with "
            "`mnemolog serve`, or set MNEMOLOG_URL (or base_url) to where it runs"
        )
        self.url = url


class RequestFailed(MnemologError):
    """The server was reached but the exchange failed: it timed out, the connection dropped,
    or the answer was not the JSON this client expects."""

    code = "request_failed"

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"request to {url} failed: {reason}")
        self.url = url


def error_classes() -> dict[str, type[MnemologError]]:
    """Every error class by its ``code``; for a code two classes share, the first found
    (the one nearest the root) wins."""
    found: dict[str, type[MnemologError]] = {}
    pending: list[type[MnemologError]] = [MnemologError]
    while pending:
        cls = pending.pop(0)
        found.setdefault(cls.code, cls)
        pending.extend(cls.__subclasses__())
    return found


def _by_status(status: int) -> type[MnemologError]:
    """The class of an error whose code this client does not know."""
    if status == 401:
        return Unauthorized
    if status == 403:
        return RequestRefused
    if status == 404:
        return NotFound
    if 400 <= status < 500:
        return InvalidInput
    return MnemologError


def _decode(content: bytes) -> tuple[object, str | None, str | None]:
    """The body (JSON if it is JSON, else its text), and its error code and message."""
    try:
        body: object = msgspec.json.decode(content)
    except msgspec.DecodeError:
        return content.decode("utf-8", errors="replace"), None, None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return body, None, None
    code, message = error.get("code"), error.get("message")
    return (
        body,
        code if isinstance(code, str) else None,
        message if isinstance(message, str) else None,
    )


def error_from(status: int, content: bytes) -> MnemologError:
    """The exception an error answer stands for, with ``.status`` and ``.body`` attached."""
    body, code, message = _decode(content)
    cls = error_classes().get(code or "") or _by_status(status)
    text = message or (body if isinstance(body, str) and body else f"HTTP {status}")
    exc: MnemologError
    if issubclass(cls, UpstreamRejected):
        exc = cls(status, text)
    else:
        try:
            exc = cls(text)
        except TypeError:
            # A class whose constructor takes more than a message (CorruptRecord): made
            # without it, as the message is all the wire carries.
            exc = cls.__new__(cls)
            Exception.__init__(exc, text)
    # The tree's classes declare neither attribute: they are the client's, set on the instance.
    exc.__dict__.update(status=status, body=body)
    return exc


def transport_error(
    base_url: str, method: str, path: str, exc: httpx.TransportError
) -> MnemologError:
    """A failure below HTTP: no connection at all, or one that broke."""
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return ServerUnreachable(base_url, f"{method} {path}")
    reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return RequestFailed(f"{base_url}{path}", f"{method}: {reason}")


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an exception raised by the client was answered with (None when it did
    not come from an answer)."""
    status: Any = getattr(exc, "status", None)
    return status if isinstance(status, int) else None


__all__ = [
    "RequestFailed",
    "ServerUnreachable",
    "error_classes",
    "error_from",
    "status_of",
    "transport_error",
]
