"""Failure codes of DESIGN §6 and the exception that carries them to the client.

Handlers, the store and security raise ``ApiError``; the app turns it into an
RFC 9457 ``application/problem+json`` response, and the MCP layer into an
``isError`` tool result with the same ``code``. The code is the stable contract;
``detail`` is for humans.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    unauthorized = "unauthorized"
    permission_denied = "permission_denied"
    not_found = "not_found"
    method_not_allowed = "method_not_allowed"
    invalid_params = "invalid_params"
    payload_too_large = "payload_too_large"
    conflict = "conflict"
    rate_limited = "rate_limited"
    rate_limit_unavailable = "rate_limit_unavailable"
    backend_unavailable = "backend_unavailable"
    backend_error = "backend_error"


STATUS_BY_CODE: dict[ErrorCode, int] = {
    ErrorCode.unauthorized: 401,
    ErrorCode.permission_denied: 403,
    ErrorCode.not_found: 404,
    ErrorCode.method_not_allowed: 405,
    ErrorCode.invalid_params: 422,
    ErrorCode.payload_too_large: 413,
    ErrorCode.conflict: 409,
    ErrorCode.rate_limited: 429,
    ErrorCode.rate_limit_unavailable: 503,
    ErrorCode.backend_unavailable: 503,
    ErrorCode.backend_error: 500,
}

TITLE_BY_CODE: dict[ErrorCode, str] = {
    ErrorCode.unauthorized: "Missing or invalid bearer token",
    ErrorCode.permission_denied: "Permission denied",
    ErrorCode.not_found: "Not found",
    ErrorCode.method_not_allowed: "Method not allowed",
    ErrorCode.invalid_params: "Invalid parameters",
    ErrorCode.payload_too_large: "Payload too large",
    ErrorCode.conflict: "Conflict",
    ErrorCode.rate_limited: "Rate limit exceeded",
    ErrorCode.rate_limit_unavailable: "Rate limiter unavailable",
    ErrorCode.backend_unavailable: "Backend unavailable",
    ErrorCode.backend_error: "Backend error",
}


@dataclass(frozen=True)
class FieldError:
    """One failing argument: where (JSON pointer), which rule, and a readable message."""

    field: str
    rule: str
    message: str


@dataclass
class ApiError(Exception):
    """An expected failure with a stable code; never carries a stack trace to the client."""

    code: ErrorCode
    detail: str
    errors: list[FieldError] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(f"{self.code}: {self.detail}")

    @property
    def status(self) -> int:
        return STATUS_BY_CODE[self.code]

    def problem(self, request_id: str | None = None, instance: str | None = None) -> dict[str, Any]:
        """The RFC 9457 body for this error."""
        body: dict[str, Any] = {
            "type": f"https://memory-bank.dev/problems/{self.code.value}",
            "title": TITLE_BY_CODE[self.code],
            "status": self.status,
            "code": self.code.value,
            "detail": self.detail,
        }
        if instance:
            body["instance"] = instance
        if request_id:
            body["request_id"] = request_id
        if self.errors:
            body["errors"] = [vars(e) for e in self.errors]
        return body


def not_found(what: str) -> ApiError:
    return ApiError(ErrorCode.not_found, f"{what} was not found")
