"""Query parameters a route does not take are refused, as unknown body fields are.

``GET /memories?q=Alice`` listed every memory: ``q`` is not one of its parameters, and was
ignored. A parameter a route does not declare is now a 400 naming it and the ones it takes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

from fastapi import Query, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from ..errors import InvalidInput
from ..proxy.passthrough import ROUTE as PASSTHROUGH
from .models import SQL_INT_MAX

# Answer only once this node has applied the log through this seq: a write's ``seq``, made on
# this node or another (read-your-writes across nodes; docs/teams.md).
MinSeq = Annotated[int | None, Query(alias="minSeq", ge=0, le=SQL_INT_MAX)]


def known_query_only(request: Request) -> None:
    """A dependency of every API route (the dashboard's pages take what a browser sends, and
    the ``/v1`` passthrough what the upstream does)."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or request.url.path.startswith("/ui"):
        return
    if route.path == PASSTHROUGH:  # the upstream's parameters, passed on as they came
        return
    refuse_unknown(request.query_params, _query_names(route.dependant))


def refuse_unknown(given: Iterable[str], taken: set[str]) -> None:
    """Refuse (400) the query parameters ``given`` that are not in ``taken``."""
    unknown = sorted(set(given) - taken)
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        accepted = ", ".join(sorted(taken)) or "none"
        raise InvalidInput(f"unknown query parameter {names}: this route takes {accepted}")


def _query_names(dependant: Dependant) -> set[str]:
    """The query parameters a route takes, its dependencies' included."""
    names = {param.alias for param in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names
