"""The arbiter of unsure pairs: the configured upstream model, asked one chat completion.

Synchronous (the write decision runs in a worker thread, under its container's lock) and
bounded by ``arbitration_timeout``; bound to the one upstream like the proxy's own client
(fixed path, no redirects, no proxy variables). Whatever goes wrong is an ``Arbitration``
without a ruling, never an exception: the pair is then kept, linked.
"""

from __future__ import annotations

import time

import httpx

from ..memory.writing.arbiter import Arbitration, messages, ruling_of
from ..settings import Settings


class UpstreamArbiter:
    def __init__(self, settings: Settings, *, transport: httpx.BaseTransport | None = None) -> None:
        self._base = (settings.upstream_base_url or "").rstrip("/")
        headers = {"accept": "application/json"}
        if settings.upstream_api_key:
            headers["authorization"] = f"Bearer {settings.upstream_api_key}"
        self._model = settings.arbitration_model
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(settings.arbitration_timeout),
            follow_redirects=False,
            trust_env=False,
            transport=transport,
        )

    def arbitrate(self, older: str, newer: str) -> Arbitration:
        started = time.perf_counter()

        def failed(code: str) -> Arbitration:
            return Arbitration(
                ruling=None, model=self._model, failure=code, latency_ms=_since(started)
            )

        try:
            model = self._model or self._first_model()
            response = self._client.post(
                f"{self._base}/chat/completions",
                json={
                    "model": model,
                    "messages": messages(older, newer),
                    "temperature": 0,
                    "max_tokens": 4,
                    "stream": False,
                },
            )
        except httpx.TimeoutException:
            return failed("timeout")
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError):
            return failed("upstream_error")
        if response.status_code != 200:
            return failed("upstream_error")
        try:
            answer = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            return failed("unreadable")
        if not isinstance(answer, str):
            return failed("unreadable")
        ruling = ruling_of(answer)
        return Arbitration(
            ruling=ruling,
            answer=answer[:2000],
            model=model,
            failure=None if ruling is not None else "unreadable",
            latency_ms=_since(started),
        )

    def _first_model(self) -> str:
        """The first model the upstream lists, asked once."""
        listed = self._client.get(f"{self._base}/models").json()
        self._model = str(listed["data"][0]["id"])
        return self._model

    def close(self) -> None:
        self._client.close()


def _since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
