"""One JSON error shape for every failure: ``{"error": {"code", "message"}}``, with the status
``web/statuses.py`` maps each error class to."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from ..errors import MnemologError
from ..web.statuses import http_status


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


async def _mnemolog_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, MnemologError)
    return error_response(http_status(exc), exc.code, str(exc))


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    return error_response(exc.status_code, code, str(exc.detail))


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return error_response(400, "invalid_input", str(exc.errors()))


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(MnemologError, _mnemolog_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
