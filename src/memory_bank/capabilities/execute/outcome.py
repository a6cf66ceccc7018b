"""Who a tool call acts for, and its result as any MCP transport renders it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pydantic_core

from memory_bank.api.media import is_json
from memory_bank.api.problems import error_for_status, problem_document
from memory_bank.errors import DomainError, ErrorCode
from memory_bank.reply import Reply
from memory_bank.security.principal import Principal

__all__ = ["Caller", "Outcome", "is_wrapped", "problem_for_agent", "reply_outcome", "response_outcome", "with_retry_hint"]


@dataclass(frozen=True)
class Caller:
    """Who a tool call acts for.

    ``principal`` is what ``token`` resolved to. ``verified_for_call``: the transport
    verified the token for this very call (HTTP does, per request), so the in-process
    request takes the principal as is. Otherwise (stdio verifies once, at start) the
    token goes along and the REST layer verifies it, so a token revoked mid-session
    stops working at once.
    """

    token: str
    principal: Principal
    request_id: str | None = None
    verified_for_call: bool = True


@dataclass(frozen=True)
class Outcome:
    """A tool call's result, independent of the MCP transport that renders it.

    On success ``structured`` is the operation's JSON object and ``text`` its copy for
    clients that read only text. A failure carries its problem document as ``text``
    alone: a tool's ``outputSchema`` describes its result, not a problem, and clients
    that check structured content against it (the TypeScript SDK, the Inspector)
    reject a result whose structured content does not match, so the agent would
    never see why its call failed. ``error_code`` is the problem's ``code``.
    """

    structured: dict[str, Any] | None
    text: str
    error_code: str | None = None

    @property
    def is_error(self) -> bool:
        return self.error_code is not None

    @classmethod
    def failure(cls, error: DomainError) -> Outcome:
        return cls.of_problem(problem_for_agent(error))

    @classmethod
    def of_problem(cls, problem: dict[str, Any]) -> Outcome:
        return cls(None, json.dumps(problem, ensure_ascii=False), error_code=str(problem.get("code")))


def with_retry_hint(problem: dict[str, Any], retry_after: str | None) -> dict[str, Any]:
    """The problem with ``retry_after_seconds`` when a ``Retry-After`` (in seconds) came with it.

    An MCP result has no headers, so the wait a REST client reads from the header
    (a spent budget, a limiter that is down) travels in the problem itself.
    """
    if retry_after is None or not retry_after.isdigit():
        return problem
    return {**problem, "retry_after_seconds": int(retry_after)}


def problem_for_agent(error: DomainError) -> dict[str, Any]:
    """``error`` as an MCP client receives it: its problem document, with its retry hint."""
    return with_retry_hint(problem_document(error), None if error.retry_after is None else str(error.retry_after))


def is_wrapped(output_schema: Mapping[str, Any] | None) -> bool:
    """Whether the catalog wrapped a non-object result as ``{"result": ...}``.

    MCP's structured content is an object, so the catalog builder puts any other
    result type under ``result``; this recognises exactly that shape (an object with
    the single required ``result`` whose own type is not object).
    """
    if not output_schema or set(output_schema) - {"type", "properties", "required", "$defs"}:
        return False
    properties = output_schema.get("properties") or {}
    return (
        output_schema.get("type") == "object"
        and list(properties) == ["result"]
        and output_schema.get("required") == ["result"]
        and properties["result"].get("type") != "object"
    )


def _success(body: Any, output_schema: Mapping[str, Any] | None) -> Outcome:
    structured = {"result": body} if is_wrapped(output_schema) else body
    return Outcome(structured if isinstance(structured, dict) else None, json.dumps(body, ensure_ascii=False))


def reply_outcome(reply: Reply[object], output_schema: Mapping[str, Any] | None) -> Outcome:
    """A handler's JSON reply as a tool result, taken from the object itself (never parsed back from its bytes)."""
    return _success(pydantic_core.to_jsonable_python(reply.body), output_schema)


def response_outcome(
    status: int, headers: Mapping[str, str], content: bytes, output_schema: Mapping[str, Any] | None
) -> Outcome:
    """A REST response as a tool result: its JSON on success, its problem's code on failure."""
    json_body = is_json(headers.get("content-type", ""))
    body = json.loads(content) if json_body and content else None
    if status >= 400:
        if isinstance(body, dict) and body.get("code") in ErrorCode.__members__:
            return Outcome.of_problem(with_retry_hint(body, headers.get("retry-after")))
        return Outcome.failure(error_for_status(status, f"the operation failed with HTTP {status}", ErrorCode.backend_error))
    if not json_body:
        return Outcome(None, content.decode("utf-8", errors="replace") or f"Done (HTTP {status}, no content).")
    return _success(body, output_schema)
