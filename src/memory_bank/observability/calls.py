"""Observe every HTTP call once: request metrics for all, an audit event for API operations.

A pure ASGI middleware (no ``BaseHTTPMiddleware``: it would buffer the JSONL export
stream). It reads what the inner layers leave on the scope once the call is done:
the matched route and its operationId (``scope["route"]``), the request id, the
principal and any operation name an endpoint gave itself (``scope["state"]``). The failure code is taken from the problem+json body
itself, so the audit shows exactly the ``code`` the client saw. A call the app
dispatches to itself (an MCP tool call) is audited once, as the tool call, by its
dispatcher; here it only counts in the metrics.
"""

from __future__ import annotations

import json
import time
from contextlib import nullcontext
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory_bank.errors import ErrorCode
from memory_bank.observability.metrics import OPERATION_STATE_KEY, Metrics
from memory_bank.problems import PROBLEM_JSON, STATUS_CODES
from memory_bank.runtime import in_process_call
from memory_bank.security.audit import Attribution, AuditEvent, AuditLog, attributing
from memory_bank.security.principal import Principal
from memory_bank.store.columns import utcnow

#: Problem documents are small; anything bigger is not one we need to read.
MAX_PROBLEM_BYTES = 64 * 1024


class _Response:
    """The status and, for a problem document, the body as it goes out."""

    def __init__(self) -> None:
        self.status = 500  # an exception before any response start is a 500
        self.complete = False  # a stream that dies mid-way (e.g. an export) started as a 200
        self._problem: bytearray | None = None

    @property
    def success(self) -> bool:
        return self.status < 400 and self.complete

    def see(self, message: Message) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            self.complete = True
        if message["type"] == "http.response.start":
            self.status = message["status"]
            headers = dict(message.get("headers", ()))
            if headers.get(b"content-type", b"").startswith(PROBLEM_JSON.encode()):
                self._problem = bytearray()
        elif message["type"] == "http.response.body" and self._problem is not None:
            if len(self._problem) < MAX_PROBLEM_BYTES:
                self._problem.extend(message.get("body", b""))

    def error_code(self) -> str | None:
        if self.success:
            return None
        if self.status < 400:
            return ErrorCode.backend_error.value
        try:
            code = json.loads(bytes(self._problem or b"")).get("code")
        except (ValueError, AttributeError):
            code = None
        fallback = ErrorCode.backend_error if self.status >= 500 else ErrorCode.invalid_params
        return str(code) if code else STATUS_CODES.get(self.status, fallback).value


class CallObserver:
    def __init__(self, app: ASGIApp, *, metrics: Metrics, audit: AuditLog) -> None:
        self.app = app
        self._metrics = metrics
        self._audit = audit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        requested_at = utcnow()
        started = time.perf_counter()
        response = _Response()

        async def observed_send(message: Message) -> None:
            response.see(message)
            await send(message)

        # In process, the dispatcher's own attribution collects the agent, for its event.
        audited = in_process_call(scope) is None
        with attributing() if audited else nullcontext(Attribution()) as attribution:
            try:
                await self.app(scope, receive, observed_send)
            finally:
                seconds = time.perf_counter() - started
                route = scope.get("route")
                operation_id: str | None = getattr(route, "operation_id", None)
                named: str | None = scope.get("state", {}).get(OPERATION_STATE_KEY)
                operation = named or operation_id or str(getattr(route, "path", "unmatched"))
                self._metrics.observe_request(operation, response.status, seconds)
                if operation_id and audited:
                    state: dict[str, Any] = scope.get("state", {})
                    principal: Principal | None = state.get("principal")
                    self._audit.record(
                        AuditEvent(
                            request_id=state.get("request_id"),
                            org_id=principal.org_id if principal else None,
                            user_id=principal.user_id if principal else None,
                            token_id=principal.token_id if principal else None,
                            agent_id=attribution.agent_id or (principal.agent_id if principal else None),
                            tool_name=operation_id,
                            latency_ms=round(seconds * 1000, 3),
                            success=response.success,
                            error_code=response.error_code(),
                            requested_at=requested_at,
                        )
                    )
