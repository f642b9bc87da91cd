"""``/ui/ask``: a search run from the dashboard as an agent runs one, then its trace.

The form takes what ``POST /search`` takes (the query, the container, the limit and the
recall's options), with the same bounds, and runs the same recall of the memory core. It is a
recall like any other: recorded in the log with its trace, its actor the agent this page acts
as (the session's key), with the ``rest`` protocol as every dashboard action. The answer is
the recall's trace page (Post/Redirect/Get), which shows why each candidate was or was not
served. A refused search (an option out of bounds, a rerank on a server without the model)
is shown beside the form with what was typed; a container out of the key's reach is refused
as everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal

import msgspec
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ..clock import parse_as_of_instant
from ..errors import InvalidInput, RerankerUnavailable
from ..memory import Caller, Core, RecallRequest, RecallResult
from .forms import read_form
from .pages import Pages, see_other

PATH = "/ui/ask"
# The form's fields, each as ``POST /search`` names it (the container as every page does).
FIELDS = (
    "container",
    "q",
    "limit",
    "searchMode",
    "rerank",
    "minTrust",
    "recency",
    "diversify",
    "asOf",
    "factAsOf",
    "includeForgotten",
)
CHOICES = {"": None, "true": True, "false": False}  # a yes/no option as the form sends it


class Asked(msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """What the form asks: the body of ``POST /search`` (``api/models.py``'s ``Search``, which
    this shell may not import: the API mounts the dashboard), with the same fields, bounds and
    defaults; ``tests/ui/test_ask_form.py`` holds the two equal. ``minSeq`` is left out: a
    person reads the store as it is."""

    q: Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)]
    container_tag: Annotated[str, msgspec.Meta(min_length=1, max_length=256)] | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10
    search_mode: Literal["memories", "documents", "hybrid"] = "memories"
    recency: bool = True
    diversify: bool | None = None
    as_of: str | None = None
    fact_as_of: str | None = None
    include_forgotten: bool = False
    rerank: bool = False
    min_trust: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None


def ask_pages(core: Core, pages: Pages) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    def form_page(
        request: Request,
        caller: Caller,
        container: str | None,
        *,
        status: int = 200,
        refused: str | None = None,
        typed: Mapping[str, str] | None = None,
    ) -> Response:
        containers = core.reads.containers(caller)
        return pages.render(
            request,
            "ask.html",
            status=status,
            containers=containers,
            container=container or (containers[0] if caller.scoped and containers else ""),
            refused=refused,
            draft={PATH: dict(typed)} if typed is not None else None,
        )

    @router.get(PATH)
    def ask(
        request: Request, container: Annotated[str | None, Query(max_length=256)] = None
    ) -> Response:
        caller = pages.caller(request)
        if container:
            caller.reach(container)
        return form_page(request, caller, container)

    @router.post(PATH)
    async def asked(request: Request) -> Response:
        form = await read_form(request, pages.sessions)
        caller = pages.caller(request)
        unknown = sorted(set(form) - set(FIELDS))
        if unknown:
            raise InvalidInput(f"a search takes no field {unknown[0]!r}")
        container = form.get("container", "").strip() or None
        caller.reach(container)  # a container out of reach is refused, not shown back
        try:
            recall = recall_request(form, container)
            result: RecallResult = await run_in_threadpool(
                lambda: core.recall.search(recall, origin="rest", actor=caller.actor("rest"))
            )
        except (InvalidInput, RerankerUnavailable) as refusal:
            status = 503 if isinstance(refusal, RerankerUnavailable) else 400
            return form_page(
                request, caller, container, status=status, refused=str(refusal), typed=form
            )
        return see_other(f"/ui/traces/{result.trace_id}")

    return router


def recall_request(form: Mapping[str, str], container: str | None) -> RecallRequest:
    """The form's fields read as ``POST /search`` reads its body, into the recall it runs."""

    def text(name: str) -> str | None:
        return form.get(name, "").strip() or None

    def number(name: str, kind: type[int] | type[float]) -> int | float | None:
        given = text(name)
        try:
            return None if given is None else kind(given)
        except ValueError:
            raise InvalidInput(f"{name} is a number, not {given!r}") from None

    def choice(name: str) -> bool | None:
        given = form.get(name, "")
        if given not in CHOICES:
            raise InvalidInput(f"{name} is true or false, not {given!r}")
        return CHOICES[given]

    fields: dict[str, object] = {
        "q": form.get("q", "").strip(),
        "containerTag": container,
        "limit": number("limit", int),
        "searchMode": text("searchMode"),
        "rerank": choice("rerank"),
        "minTrust": number("minTrust", float),
        "recency": choice("recency"),
        "diversify": choice("diversify"),
        "asOf": text("asOf"),
        "factAsOf": text("factAsOf"),
        "includeForgotten": form.get("includeForgotten") == "true",
    }
    if not fields["q"]:
        raise InvalidInput("ask a question: the query is empty")
    try:
        # Left empty, an option takes the API's default.
        body = msgspec.convert({k: v for k, v in fields.items() if v is not None}, Asked)
    except msgspec.ValidationError as exc:
        raise InvalidInput(str(exc)) from exc
    return RecallRequest(
        mode=body.search_mode,
        q=body.q,
        container_tag=body.container_tag,
        limit=body.limit,
        recency=body.recency,
        diversify=body.diversify,
        as_of=None if body.as_of is None else parse_as_of_instant(body.as_of),
        fact_as_of=None
        if body.fact_as_of is None
        else parse_as_of_instant(body.fact_as_of, "factAsOf"),
        include_forgotten=body.include_forgotten,
        rerank=body.rerank,
        min_trust=body.min_trust,
    )
