"""``GET /metrics``: the server in Prometheus's text format, for the user or an admin key.

Beside the request and stage series the app feeds as it serves (``web/metrics.py``), the store
as it is at the scrape: the log's head and what this node's projections have applied of it
(``head - applied`` is how far it trails a shared log), the memories by state (the counts of
``GET /stats``: live, superseded, forgotten, flagged by the poisoning detector, quarantined),
the containers, and the agents: how many, how many under the trust threshold, how many
quarantined.
"""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from ..memory.agents import LOCAL
from ..runtime import Runtime
from ..web.caller import caller_in
from ..web.metrics import CONTENT_TYPE_LATEST, Metrics


def metrics_routes(runtime: Runtime, metrics: Metrics) -> APIRouter:
    router = APIRouter()
    core = runtime.core

    def store() -> Iterator[Metric]:
        head = runtime.log.head().seq
        applied = core.runner.position()
        yield GaugeMetricFamily("mnemolog_log_head_seq", "The log's last seq", value=head)
        yield GaugeMetricFamily(
            "mnemolog_log_applied_seq",
            "The last seq this node's projections have applied",
            value=applied,
        )
        yield GaugeMetricFamily(
            "mnemolog_projection_lag_events",
            "Events of the log this node's projections have not applied yet",
            value=max(0, head - applied),
        )
        _, _, counts = core.reads.browse(LOCAL, status="live", container_tag=None, limit=1)
        memories = GaugeMetricFamily(
            "mnemolog_memories", "Memories by state (as GET /stats counts them)", labels=["state"]
        )
        for state, count in sorted(counts.items()):
            memories.add_metric([state], count)
        yield memories
        containers = len(core.reads.containers(LOCAL))
        yield GaugeMetricFamily("mnemolog_containers", "Containers of memories", value=containers)
        scores = core.trust.scores()
        yield GaugeMetricFamily("mnemolog_agents", "Agents the store knows of", value=len(scores))
        yield GaugeMetricFamily(
            "mnemolog_agents_distrusted",
            "Agents whose trust is under the threshold: their writes are refused",
            value=sum(core.trust.distrusted(s.agent_id) for s in scores),
        )
        yield GaugeMetricFamily(
            "mnemolog_agents_quarantined",
            "Agents in quarantine: their memories are served to nobody",
            value=sum(core.quarantine.state(s.agent_id) is not None for s in scores),
        )

    metrics.register(store)

    @router.get("/metrics", response_class=Response)
    def scrape(request: Request) -> Response:
        caller_in(request.scope).require_admin()
        return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    return router
