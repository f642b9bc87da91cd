"""One JSON error shape for every failure: ``{"error": {"code", "message"}}``, with the status
``web/statuses.py`` maps each error class to."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from ..errors import MnemologError
from ..web.statuses import http_status


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


# A dashboard page's failure, shown as a page (``ui/``); every other path gets the JSON body.
HtmlError = Callable[[Request, int, str, str], Response]


def validation_message(errors: Sequence[Any]) -> str:
    """FastAPI's validation errors as a person reads them: ``query parameter limit: Input
    should be less than or equal to 500``, one clause per error."""
    parts = []
    for error in errors:
        where = [str(part) for part in error.get("loc", ())]
        place = {"query": "query parameter", "path": "path parameter", "header": "header"}
        if where and where[0] in place:
            name = f"{place[where[0]]} {'.'.join(where[1:])}"
        else:
            name = ".".join(where) or "request"
        parts.append(f"{name}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)


def install_error_handlers(app: FastAPI, html: HtmlError | None = None) -> None:
    def answer(request: Request, status: int, code: str, message: str) -> Response:
        if html is not None and request.url.path.startswith("/ui"):
            return html(request, status, code, message)
        return error_response(status, code, message)

    async def mnemolog_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, MnemologError)
        return answer(request, http_status(exc), exc.code, str(exc))

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return answer(request, exc.status_code, code, str(exc.detail))

    async def validation_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return answer(request, 400, "invalid_input", validation_message(exc.errors()))

    app.add_exception_handler(MnemologError, mnemolog_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)
