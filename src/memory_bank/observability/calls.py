"""Account for every finished HTTP call once: request metrics for all, an audit event for API operations.

``api.middleware.CallObserver`` watches each call at the ASGI layer and hands what it
saw here; what is counted and what an audit event holds are decided in this module.
The failure code is the ``code`` of the problem document the client got, so the
audit shows exactly what the client saw. A call the app dispatches to itself (an MCP
tool call) enters below the middlewares: it is counted and logged as the ``/mcp``
request it is part of, and counted by tool and outcome and audited once, as the tool
call, by its dispatcher (``mcp.tools.Toolbox``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memory_bank.observability.audit import AuditEvent, AuditLog
from memory_bank.observability.metrics import Metrics
from memory_bank.security.principal import Principal


@dataclass(frozen=True)
class FinishedCall:
    """What one HTTP call was and how it ended.

    ``operation``: the metrics label (an operationId, a name an endpoint gave itself, or
    the route path); ``operation_id``: set only for API operations, which are audited.
    ``state``: the request state the inner layers left (request id, principal).
    """

    operation: str
    operation_id: str | None
    status: int
    seconds: float
    success: bool
    error_code: str | None
    requested_at: datetime
    state: Mapping[str, Any]
    agent_id: str | None


class CallAccounting:
    def __init__(self, metrics: Metrics, audit: AuditLog) -> None:
        self._metrics = metrics
        self._audit = audit

    def finished(self, call: FinishedCall) -> None:
        self._metrics.observe_request(call.operation, call.status, call.seconds)
        if not call.operation_id:
            return
        principal: Principal | None = call.state.get("principal")
        self._audit.record(
            AuditEvent(
                request_id=call.state.get("request_id"),
                org_id=principal.org_id if principal else None,
                user_id=principal.user_id if principal else None,
                token_id=principal.token_id if principal else None,
                agent_id=call.agent_id or (principal.agent_id if principal else None),
                tool_name=call.operation_id,
                latency_ms=round(call.seconds * 1000, 3),
                success=call.success,
                error_code=call.error_code,
                requested_at=call.requested_at,
            )
        )
