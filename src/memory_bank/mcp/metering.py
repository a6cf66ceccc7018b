"""Charge every MCP request to the org's budget, once.

A ``tools/call`` is charged where it ends (``Toolbox``): by the REST route it is
dispatched into, after that route's permission check, or by the toolbox when it is
answered before dispatch; a refusal there is a tool result the agent reads. Every
other request (``initialize``, ``tools/list``, ``ping``, an unknown method, and a
``tools/call`` too malformed to reach the toolbox) does no REST call, so it is
charged by its transport before it runs (``charged_by_transport``) and refused with a
JSON-RPC error (``refusal``): over stdio by the ``Metering`` middleware, over HTTP by
``/mcp`` itself, which can also say 429 or 503 and ``Retry-After`` (``mcp.http``).
Notifications are not charged: they get no answer and change nothing, so there is
nothing to refuse.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import ErrorData
from pydantic import ValidationError

from memory_bank.capabilities.execute.outcome import Caller, problem_for_agent
from memory_bank.errors import DomainError
from memory_bank.mcp.exchange import CALL_TOOL

#: JSON-RPC's implementation-defined server error: the request was refused, not broken.
#: ``data`` is the problem document (``code``, ``retry_after_seconds``...).
REFUSED = -32000


def refusal(error: DomainError) -> ErrorData:
    """A refusal of a request that has no tool result to carry it, as a JSON-RPC error."""
    return ErrorData(code=REFUSED, message=error.detail, data=problem_for_agent(error))


def _reaches_toolbox(params: Any) -> bool:
    """Whether a ``tools/call`` passes the SDK's own checks and so ends in the toolbox."""
    try:
        types.CallToolRequestParams.model_validate({} if params is None else params, by_name=False)
    except ValidationError:
        return False
    return True


def charged_by_transport(method: str, params: Any) -> bool:
    """Whether a request (not a notification) is charged before it runs, as no tool result will carry its refusal."""
    return not (method == CALL_TOOL and _reaches_toolbox(params))


class Metering:
    """Server middleware: admit each request that no other layer will charge (stdio's; ``/mcp`` charges its own)."""

    def __init__(
        self,
        admit: Callable[[Caller], Awaitable[None]],
        caller_of: Callable[[ServerRequestContext[Any, Any]], Caller],
    ) -> None:
        self._admit = admit
        self._caller_of = caller_of

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is not None and charged_by_transport(ctx.method, ctx.params):
            try:
                await self._admit(self._caller_of(ctx))
            except DomainError as error:
                raise MCPError.from_error_data(refusal(error)) from None
        return await call_next(ctx)
