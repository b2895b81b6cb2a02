"""MemoryError → HTTP: one status per code, body ``{code, message, operation, details, retryable}``."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import ErrorCode, MemoryError

log = logging.getLogger("stratamem.server")

STATUS: dict[ErrorCode, int] = {
    ErrorCode.INVALID_LAYER: 400,
    ErrorCode.MISSING_IDENTIFIER: 400,
    ErrorCode.INVALID_PARAMS: 400,
    ErrorCode.QUERY_TOO_LONG: 400,
    ErrorCode.INVALID_SCOPE_PROMOTION: 400,
    ErrorCode.MISSING_TENANT_CONTEXT: 401,
    ErrorCode.INVALID_TENANT_CONTEXT: 401,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.MEMORY_NOT_FOUND: 404,
    ErrorCode.CONFLICT: 409,
    ErrorCode.CONTENT_TOO_LONG: 413,
    ErrorCode.POLICY_VIOLATION: 422,
    ErrorCode.UNSAFE_CONTENT: 422,
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.QUOTA_EXCEEDED: 429,
    ErrorCode.COMPACTION_FAILED: 500,
    ErrorCode.CONFIGURATION_ERROR: 500,
    ErrorCode.EMBEDDING_FAILED: 502,
    ErrorCode.PROVIDER_ERROR: 503,
}
assert set(STATUS) == set(ErrorCode)


class ErrorBody(BaseModel):
    """Every error response of the API."""

    model_config = ConfigDict(extra="forbid")

    code: ErrorCode
    message: str
    operation: str
    details: dict[str, Any]
    retryable: bool


def error_response(exc: MemoryError) -> JSONResponse:
    headers: dict[str, str] = {}
    if exc.code is ErrorCode.RATE_LIMITED:
        retry_after = exc.details.get("retry_after", 1)
        headers["Retry-After"] = str(max(1, int(-(-float(retry_after) // 1))))
    if exc.code in (ErrorCode.MISSING_TENANT_CONTEXT, ErrorCode.INVALID_TENANT_CONTEXT, ErrorCode.UNAUTHORIZED):
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse(exc.to_dict(), status_code=STATUS[exc.code], headers=headers)


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` documenting these error statuses with the codes each can carry."""
    out: dict[int | str, dict[str, Any]] = {}
    for status in sorted(set(statuses)):
        codes = [c.value for c, s in STATUS.items() if s == status]
        out[status] = {"model": ErrorBody, "description": "Error: " + ", ".join(codes)}
    return out


#: Statuses any authenticated route can answer.
COMMON = (400, 401, 403, 413, 422, 429, 500, 502, 503)


def _safe_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    return [
        {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
        for e in exc.errors()[:20]
    ]


def install(app: FastAPI) -> None:
    @app.exception_handler(MemoryError)
    async def _memory_error(request: Request, exc: MemoryError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = _safe_errors(exc)
        if any(e["type"] == "json_invalid" for e in errors):
            message = "the request body is not valid JSON"
        else:
            first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
            message = f"invalid {'.'.join(first['loc'][1:]) or 'request'}: {first['msg']}"
        return error_response(
            MemoryError(ErrorCode.INVALID_PARAMS, message, operation=_op(request), details={"errors": errors})
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        body = MemoryError(ErrorCode.INVALID_PARAMS, str(exc.detail), operation=_op(request)).to_dict()
        return JSONResponse(body, status_code=exc.status_code, headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return error_response(
            MemoryError(
                ErrorCode.PROVIDER_ERROR,
                "internal error (logged on the server)",
                operation=_op(request),
                retryable=False,
            )
        )


def _op(request: Request) -> str:
    route = request.scope.get("route")
    return str(getattr(route, "name", "") or request.url.path)
