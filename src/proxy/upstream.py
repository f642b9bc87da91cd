"""The one upstream: a pooled httpx client bound to the configured base URL.

Nothing a client sends can point it elsewhere: paths are fixed, redirects are not followed and
proxy variables of the environment are ignored. Every caller shares it, so it keeps no cookie
(``NoCookies``): one a call was answered with would go with every later call of every key.
Transport failures become ``UpstreamFailed``
(502) or ``UpstreamTimeout`` (504); a non-2xx answer is turned into one by ``failure_of``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http.cookiejar import Cookie, CookieJar
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from ..errors import UpstreamFailed, UpstreamNotConfigured, UpstreamRejected, UpstreamTimeout
from ..settings import Settings

# 4xx statuses that are the caller's to fix, passed on as they are; any other is a 502.
_CALLER_STATUSES = {400, 404, 413, 422, 429}


class NoCookies(CookieJar):
    """A cookie jar that never stores one (httpx's way to turn its cookies off, until it has
    an option for it: encode/httpx#1359)."""

    def extract_cookies(self, response: Any, request: Any) -> None:
        return None

    def set_cookie(self, cookie: Cookie) -> None:
        return None


class Upstream:
    def __init__(
        self, settings: Settings, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.base_url = (settings.upstream_base_url or "").rstrip("/")
        self._headers = {"accept": "application/json"}
        if settings.upstream_api_key:
            self._headers["authorization"] = f"Bearer {settings.upstream_api_key}"
        self._timeout = httpx.Timeout(
            settings.upstream_timeout, connect=settings.upstream_connect_timeout
        )
        self._transport = transport
        self._client: httpx.AsyncClient | None = None

    @property
    def configured(self) -> bool:
        return bool(self.base_url)

    @property
    def shown(self) -> str:
        """The base URL as an error may name it: without any credentials written into it."""
        parts = urlsplit(self.base_url)
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit((parts.scheme, host, parts.path, "", ""))

    def _http(self) -> httpx.AsyncClient:
        if not self.base_url:
            raise UpstreamNotConfigured("no upstream is configured: set MNEMOLOG_UPSTREAM_BASE_URL")
        if self._client is None:
            # Made on first use, inside the server's event loop.
            self._client = httpx.AsyncClient(
                timeout=self._timeout,
                limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
                follow_redirects=False,
                trust_env=False,
                cookies=NoCookies(),
                transport=self._transport,
            )
        return self._client

    async def post_chat(self, body: bytes) -> httpx.Response:
        """A buffered chat completion; the response is read whatever its status."""
        try:
            return await self._http().post(
                f"{self.base_url}/chat/completions",
                content=body,
                headers={**self._headers, "content-type": "application/json"},
            )
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc

    @asynccontextmanager
    async def stream_chat(self, body: bytes) -> AsyncIterator[httpx.Response]:
        """A streamed chat completion; the connection is closed when the block ends,
        including when the task is cancelled (a client that went away)."""
        client = self._http()
        request = client.build_request(
            "POST",
            f"{self.base_url}/chat/completions",
            content=body,
            headers={
                **self._headers,
                "content-type": "application/json",
                "accept": "text/event-stream",
            },
        )
        try:
            response = await client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        try:
            yield response
        finally:
            await response.aclose()

    async def open(
        self, method: str, path: str, query: str, body: bytes, headers: dict[str, str]
    ) -> httpx.Response:
        """Any other request under the base URL, its answer streamed: the caller closes it.
        ``headers`` are the client's content headers; the upstream's key is this server's."""
        client = self._http()
        url = f"{self.base_url}/{path}" + (f"?{query}" if query else "")
        # The client's headers come decoded one character a byte (ASGI's latin-1): encoded
        # back the same way they go as they came; httpx's ASCII failed on any other byte (a 500).
        sent = httpx.Headers({**self._headers, **headers}, encoding="latin-1")
        request = client.build_request(method, url, content=body or None, headers=sent)
        try:
            return await client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc

    async def get_models(self) -> httpx.Response:
        try:
            return await self._http().get(f"{self.base_url}/models", headers=self._headers)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc

    def _unreachable(self, exc: httpx.HTTPError) -> UpstreamFailed | UpstreamTimeout:
        """A transport failure, naming the upstream it was trying to reach."""
        if isinstance(exc, httpx.TimeoutException):
            return UpstreamTimeout(
                f"the upstream at {self.shown} did not answer in time ({_kind(exc)})"
            )
        return UpstreamFailed(f"the upstream at {self.shown} cannot be reached: {_kind(exc)}")

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def failure_of(status: int, body: bytes) -> UpstreamFailed:
    """The error for a non-2xx upstream answer, carrying the upstream's own message."""
    message = upstream_message(body) or f"HTTP {status}"
    if status in _CALLER_STATUSES:
        return UpstreamRejected(status, f"the upstream refused the request: {message}")
    return UpstreamFailed(f"the upstream failed with HTTP {status}: {message}")


def upstream_message(body: bytes) -> str:
    """The message of an OpenAI-style error body, or the start of whatever it sent."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return body[:500].decode("utf-8", "replace").strip()
    if isinstance(parsed, dict):
        error = parsed.get("error", parsed)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])[:500]
        if isinstance(error, str):
            return error[:500]
    return body[:500].decode("utf-8", "replace").strip()


def _kind(exc: Exception) -> str:
    return type(exc).__name__
