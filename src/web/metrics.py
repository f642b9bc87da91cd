"""What an operator's Prometheus scrapes from ``GET /metrics``: requests by route and status
and how long they took, the stage times of every write and search, and what the store holds
(read at scrape time by the collectors the app registers).

One registry per app (not the library's global one): two servers in one process (the tests)
keep their counts apart. A route is named by its template (``/memories/{memory_id}``), never
by the path a client sent, so that no id, key or typo becomes a series of its own; a path no
route answers is counted as ``unmatched``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CONTENT_TYPE_LATEST", "Metrics", "RequestMetrics"]

# Seconds: from a hot write (about 2 ms) to a proxied turn's model call (seconds).
_REQUEST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
# Seconds: a stage is a share of a request, from microseconds (fusion) to a rerank.
_STAGE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5)
UNMATCHED = "unmatched"
# A method is the client's to write: any other is counted as ``other``.
_METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))


class Metrics:
    """The server's registry and the series every request and operation feeds. It is also
    the domain's ``StageTimings`` (``memory/timings.py``): a write and a search report
    their stages to it."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "mnemolog_http_requests",
            "HTTP requests answered, by method, route and status",
            ("method", "route", "status"),
            registry=self.registry,
        )
        self.request_seconds = Histogram(
            "mnemolog_http_request_duration_seconds",
            "From a request's arrival to its answer's last byte, by method and route",
            ("method", "route"),
            buckets=_REQUEST_BUCKETS,
            registry=self.registry,
        )
        self.stage_seconds = Histogram(
            "mnemolog_stage_duration_seconds",
            "Each stage of a write (embed, decide, durable) and of a search (embed, vector,"
            " bm25, rerank, fuse, ...), as the operation timed it",
            ("operation", "stage"),
            buckets=_STAGE_BUCKETS,
            registry=self.registry,
        )

    def observe(self, operation: str, stages_ms: Mapping[str, float]) -> None:
        for stage, ms in stages_ms.items():
            self.stage_seconds.labels(operation, stage).observe(ms / 1000)

    def register(self, collect: Callable[[], Iterable[Metric]]) -> None:
        """Series read at scrape time: ``collect`` yields metric families."""
        self.registry.register(_Collected(collect))

    def exposition(self) -> bytes:
        """The registry in Prometheus's text format."""
        return generate_latest(self.registry)


class _Collected(Collector):
    def __init__(self, collect: Callable[[], Iterable[Metric]]) -> None:
        self._collect = collect

    def collect(self) -> Iterable[Metric]:
        return self._collect()

    def describe(self) -> Iterable[Metric]:
        return ()  # read at every scrape, never at registration


class RequestMetrics:
    """ASGI middleware: counts and times every HTTP request by the route that answered it.
    ``fixed`` names the paths answered in front of the framework (the hot routes, ``/mcp``),
    which carry no route of their own."""

    def __init__(self, app: ASGIApp, metrics: Metrics, fixed: Iterable[str]) -> None:
        self.app = app
        self.metrics = metrics
        self.fixed = frozenset(fixed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 0

        async def seen(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, seen)
        finally:
            route = self._route(scope)
            method = scope["method"] if scope["method"] in _METHODS else "other"
            self.metrics.requests.labels(method, route, str(status or 500)).inc()
            self.metrics.request_seconds.labels(method, route).observe(
                time.perf_counter() - started
            )

    def _route(self, scope: Scope) -> str:
        route = scope.get("route")
        template = getattr(route, "path", None)
        if isinstance(template, str):
            return template
        path: str = scope["path"]
        return path if path in self.fixed else UNMATCHED
