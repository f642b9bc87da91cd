"""``GET /ranker`` and ``POST /ranker/train``: the learned ranker's models, and training now.

``GET /ranker`` answers, per container the key reaches that has feedback or a model, the model
serving it (its own, else the global one, else none), with the figures it was promoted on and
its weights, the feedback counted, and the latest decisions (trained, promoted, rolled back);
and the global model. ``POST /ranker/train`` (the user's or an admin key) trains at once and
answers what each training did once its events are in the log.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from ..memory.recall.ranker_report import container_json, model_json
from ..memory.recall.training import Trained
from ..runtime import Runtime
from ..web.caller import caller_in
from ..web.request_body import decode_json, read_body
from .models import TrainRanker


def ranker_routes(runtime: Runtime, limit: int) -> APIRouter:
    router = APIRouter()
    core = runtime.core

    @router.get("/ranker")
    def ranker(
        request: Request,
        container_tag: Annotated[str | None, Query(alias="containerTag", max_length=256)] = None,
    ) -> JSONResponse:
        caller = caller_in(request.scope)
        projection = core.ranker
        if container_tag is not None:
            caller.reach(container_tag)
            tags = [container_tag]
        else:
            reached = set(core.reads.containers(caller))
            tags = sorted(
                {t for t in projection.containers() if t in reached}
                | {t for t in projection.serving_digests() if t is not None and t in reached}
            )
        return JSONResponse(
            {
                "global": model_json(projection, projection.serving_digests().get(None)),
                "containers": [container_json(projection, tag) for tag in tags],
            }
        )

    @router.post("/ranker/train")
    async def train(request: Request) -> JSONResponse:
        raw = await read_body(request, max_bytes=limit)
        body = decode_json(raw or b"{}", TrainRanker)  # an empty body trains every container
        caller = caller_in(request.scope)
        caller.require_admin()
        if body.container_tag is not None:
            caller.reach(body.container_tag)
        trained = await run_in_threadpool(core.ranking.train, body.container_tag)
        return JSONResponse({"trained": [_trained_json(t) for t in trained]})

    return router


def _trained_json(trained: Trained) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(trained)
    return {
        "containerTag": out["container_tag"],
        "digest": out["digest"],
        "promoted": out["promoted"],
        "examples": out["examples"],
        "metrics": out["metrics"],
        "reason": out["reason"],
    }
