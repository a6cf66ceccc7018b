"""Domain errors: the failures every layer can name, with no HTTP in them.

Handlers, the store and security raise a ``DomainError`` subclass. Its ``code``
(DESIGN §6) is the stable contract every door answers with; ``detail`` is for
humans. The HTTP edge (``api.problems``) gives each code its status and problem
document, the MCP layer an ``isError`` tool result, the CLI a line on stderr.
A pydantic failure becomes the same ``FieldError`` list wherever it happens
(``field_errors``), so every door names a bad field in one vocabulary.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, ClassVar

from memory_bank.pattern_messages import pattern_message
from memory_bank.standard_json import plain_fault


class ErrorCode(StrEnum):
    unauthorized = "unauthorized"
    permission_denied = "permission_denied"
    not_found = "not_found"
    method_not_allowed = "method_not_allowed"
    not_acceptable = "not_acceptable"
    unsupported_media_type = "unsupported_media_type"
    invalid_params = "invalid_params"
    payload_too_large = "payload_too_large"
    request_head_too_large = "request_head_too_large"
    malformed_request = "malformed_request"
    request_timeout = "request_timeout"
    conflict = "conflict"
    rate_limited = "rate_limited"
    rate_limit_unavailable = "rate_limit_unavailable"
    backend_unavailable = "backend_unavailable"
    backend_error = "backend_error"


@dataclass(frozen=True)
class FieldError:
    """One failing field: where, which rule (a JSON Schema keyword where one fits), and a readable message.

    ``field`` names the field in the raiser's own terms. The store and the file format
    speak of ``cursor`` or ``line 3`` (words are the segments of the path, ``""`` the
    whole input); the edge, which knows where a field came from, points into the
    request instead (``/query/cursor``, ``/body/line/3``).
    """

    field: str
    rule: str
    message: str


#: pydantic error type -> the JSON Schema keyword a client can look up in the spec.
RULE_BY_ERROR_TYPE: dict[str, str] = {
    "missing": "required",
    "extra_forbidden": "additionalProperties",
    "string_too_short": "minLength",
    "string_too_long": "maxLength",
    "too_short": "minItems",
    "too_long": "maxItems",
    "unique_items": "uniqueItems",
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


def json_pointer(location: Sequence[Any]) -> str:
    """``("body", "tags", 3)`` -> ``/body/tags/3`` (RFC 6901 escaping)."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in location)


def field_errors(errors: Sequence[dict[str, Any]]) -> list[FieldError]:
    """pydantic's error list as pointers, rules and messages a caller can act on."""
    found = []
    for error in errors:
        kind = str(error.get("type", "value_error"))
        rule = RULE_BY_ERROR_TYPE.get(kind, "type" if kind.endswith(("_type", "_parsing")) else kind)
        message = str(error.get("msg", kind))
        if rule == "pattern":
            message = pattern_message((error.get("ctx") or {}).get("pattern")) or message
        elif kind == "json_invalid":
            message = f"Invalid JSON: {plain_fault(str((error.get('ctx') or {}).get('error', message)))}"
        elif kind == "value_error":
            message = message.removeprefix("Value error, ")  # pydantic's prefix to a validator's own words
        found.append(FieldError(json_pointer(error.get("loc", ())), rule, message))
    return found


class DomainError(Exception):
    """An expected failure with a stable code; never carries a stack trace to the client.

    ``retry_after``: seconds after which the same call may succeed (a spent budget,
    a busy database), for clients that wait instead of failing.
    """

    code: ClassVar[ErrorCode]

    def __init__(self, detail: str, errors: Sequence[FieldError] = (), *, retry_after: int | None = None) -> None:
        super().__init__(f"{self.code}: {detail}")
        self.detail = detail
        self.errors = list(errors)
        self.retry_after = retry_after


class Unauthorized(DomainError):
    code = ErrorCode.unauthorized


class PermissionDenied(DomainError):
    code = ErrorCode.permission_denied

    @classmethod
    def deactivated(cls, agent_id: str) -> PermissionDenied:
        """A write by a deactivated agent: the answer of ``resolve_agent`` and of the write's own transaction."""
        return cls(f"agent {agent_id!r} is deactivated")


class NotFound(DomainError):
    code = ErrorCode.not_found

    @classmethod
    def of(cls, what: str) -> NotFound:
        return cls(f"{what} was not found")


class MethodNotAllowed(DomainError):
    code = ErrorCode.method_not_allowed


class NotAcceptable(DomainError):
    """The client takes none of the media types the answer comes in (its ``Accept``)."""

    code = ErrorCode.not_acceptable


class UnsupportedMediaType(DomainError):
    """The body comes in a media type or a content coding this door does not read."""

    code = ErrorCode.unsupported_media_type


class InvalidInput(DomainError):
    code = ErrorCode.invalid_params


class PayloadTooLarge(DomainError):
    code = ErrorCode.payload_too_large


class RequestHeadTooLarge(DomainError):
    """The request line and headers are over what the server reads before a body."""

    code = ErrorCode.request_head_too_large


class MalformedRequest(DomainError):
    """Bytes that are not an HTTP request at all: nothing to route, so nothing else to say."""

    code = ErrorCode.malformed_request


class RequestTimeout(DomainError):
    """A request that stopped arriving: its head not whole in time, or its body paused too long."""

    code = ErrorCode.request_timeout


class Conflict(DomainError):
    code = ErrorCode.conflict


class RateLimited(DomainError):
    code = ErrorCode.rate_limited


class RateLimitUnavailable(DomainError):
    code = ErrorCode.rate_limit_unavailable


class BackendUnavailable(DomainError):
    code = ErrorCode.backend_unavailable


class BackendError(DomainError):
    code = ErrorCode.backend_error


#: The error class of each code, for the doors that learn of a failure by its code alone.
ERROR_BY_CODE: dict[ErrorCode, type[DomainError]] = {
    cls.code: cls
    for cls in (
        Unauthorized,
        PermissionDenied,
        NotFound,
        MethodNotAllowed,
        NotAcceptable,
        UnsupportedMediaType,
        InvalidInput,
        PayloadTooLarge,
        RequestHeadTooLarge,
        MalformedRequest,
        RequestTimeout,
        Conflict,
        RateLimited,
        RateLimitUnavailable,
        BackendUnavailable,
        BackendError,
    )
}


@contextmanager
def fields_from(source: str) -> Iterator[None]:
    """Re-point the field errors raised inside at the request part they came from.

    The store and the file format name fields as they know them (``cursor``,
    ``line 3``, ``""`` for the whole input); the handler that passed them knows they
    are ``/query/cursor``, ``/body/line/3`` or ``/body``, which is what clients are told.
    """
    try:
        yield
    except DomainError as error:
        error.errors = [replace(e, field=json_pointer((source, *e.field.split()))) for e in error.errors]
        raise
