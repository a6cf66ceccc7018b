"""Every failure leaves the app as an RFC 9457 problem document with a DESIGN §6 code.

FastAPI's own 422 body and Starlette's HTML 500 would give clients two error formats
and leak internals; these handlers give one format with a stable ``code`` and, for
bad input, a JSON pointer, rule and message per failing field. Exceptions no handler
here expects become the 500 document in ``middleware.UnexpectedErrorMiddleware``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from memory_bank.errors import ApiError, ErrorCode, FieldError

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"

#: pydantic error type -> the JSON Schema keyword a client can look up in the spec.
RULE_BY_ERROR_TYPE: dict[str, str] = {
    "missing": "required",
    "extra_forbidden": "additionalProperties",
    "string_too_short": "minLength",
    "string_too_long": "maxLength",
    "too_short": "minItems",
    "too_long": "maxItems",
    "string_pattern_mismatch": "pattern",
    "greater_than_equal": "minimum",
    "greater_than": "exclusiveMinimum",
    "less_than_equal": "maximum",
    "less_than": "exclusiveMaximum",
    "literal_error": "enum",
    "enum": "enum",
    "json_invalid": "json",
    "value_error": "value",
}

#: The methods an ``Allow`` header may name, in the order it names them.
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")

#: Over a size bound in a body: the client sent too much, not something malformed.
SIZE_RULES = frozenset({"maxLength", "maxItems"})

STATUS_CODES: dict[int, ErrorCode] = {
    401: ErrorCode.unauthorized,
    403: ErrorCode.permission_denied,
    404: ErrorCode.not_found,
    405: ErrorCode.method_not_allowed,
    409: ErrorCode.conflict,
    413: ErrorCode.payload_too_large,
    429: ErrorCode.rate_limited,
}


def json_pointer(location: Sequence[Any]) -> str:
    """``("body", "tags", 3)`` -> ``/body/tags/3`` (RFC 6901 escaping)."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in location)


def field_errors(errors: Sequence[dict[str, Any]]) -> list[FieldError]:
    """pydantic's error list as pointers, rules and messages a caller can act on."""
    found = []
    for error in errors:
        kind = str(error.get("type", "value_error"))
        rule = RULE_BY_ERROR_TYPE.get(kind, "type" if kind.endswith(("_type", "_parsing")) else kind)
        found.append(FieldError(json_pointer(error.get("loc", ())), rule, str(error.get("msg", kind))))
    return found


def validation_error(errors: list[FieldError]) -> ApiError:
    """413 when every failure is a body over its size bound, else 422 naming each field."""
    too_large = all(e.rule in SIZE_RULES and e.field.startswith("/body") for e in errors)
    code = ErrorCode.payload_too_large if errors and too_large else ErrorCode.invalid_params
    summary = "; ".join(f"{e.field or '/'}: {e.message}" for e in errors[:5])
    return ApiError(code, summary or "the request does not match the schema", errors)


def allowed_methods(request: Request) -> list[str]:
    """Every method the app would route at this request's path.

    Starlette's 405 names only the methods of the first route whose path matched, but
    a path such as ``/v1/memory/{memory_id}`` is served by one route per method; so
    each method is put to the router's own matching.
    """
    routes = request.app.router.routes
    return [
        method
        for method in HTTP_METHODS
        if any(route.matches({**request.scope, "method": method})[0] is Match.FULL for route in routes)
    ]


def problem_response(request: Request, error: ApiError) -> JSONResponse:
    request_id = getattr(request.state, "request_id", None)
    return JSONResponse(
        error.problem(request_id=request_id, instance=request.url.path),
        status_code=error.status,
        media_type=PROBLEM_JSON,
        headers=error.headers or None,
    )


def install_problem_handlers(app: FastAPI) -> None:
    """Route every exception class a request can raise to one problem+json renderer."""

    async def on_api_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        return problem_response(request, exc)

    async def on_validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return problem_response(request, validation_error(field_errors(exc.errors())))

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = STATUS_CODES.get(exc.status_code, ErrorCode.invalid_params)
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request))
        return problem_response(request, ApiError(code, str(exc.detail), headers=headers))

    async def on_database_down(request: Request, exc: Exception) -> JSONResponse:
        log.warning("database unreachable: %s", exc)
        return problem_response(request, ApiError(ErrorCode.backend_unavailable, "the database is unreachable"))

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(OperationalError, on_database_down)
