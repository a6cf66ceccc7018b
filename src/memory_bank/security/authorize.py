"""The ``Authorize`` dependency the generated routes call before anything else.

``make_authorize(tokens, limiter)("memory:write")`` is a FastAPI dependency: it resolves
the bearer token to a ``Principal``, leaves it on ``request.state.principal`` (for
logging and audit), checks the permission the operation's ``x-capability`` names,
counts the call against the org's rate limit and returns the principal: the one
place every REST and MCP call passes through, so each admitted call is charged
exactly once. The permission is checked before the charge: a token refused for
lack of a permission must not spend the budget its org's other tokens live on.
The audit event is written around the call by ``observability.calls``.

A call the app dispatches to itself (an MCP tool call) may arrive with its principal
already verified, on the ASGI scope (``runtime.InProcessCall``); that one is taken
as is, so a tool call verifies its token once. Headers cannot carry it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from memory_bank.errors import ApiError, ErrorCode
from memory_bank.runtime import ANY_TOKEN, Authorize, in_process_call
from memory_bank.security.principal import Principal
from memory_bank.security.rate_limit import RateLimiter
from memory_bank.security.tokens import TokenStore

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="memory-bank"'}


def bearer_token(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; the scheme is case-insensitive."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def make_authorize(tokens: TokenStore, limiter: RateLimiter) -> Authorize:
    async def authenticate(request: Request) -> Principal:
        call = in_process_call(request.scope)
        if call is not None and call.principal is not None:
            return call.principal  # verified by the MCP transport for this very call
        token = bearer_token(request)
        if token is None:
            raise ApiError(ErrorCode.unauthorized, "send Authorization: Bearer <token>", headers=_CHALLENGE)
        principal = await run_in_threadpool(tokens.verify, token)
        if principal is None:
            raise ApiError(ErrorCode.unauthorized, "the bearer token is not valid", headers=_CHALLENGE)
        return principal

    def authorize(permission: str) -> Callable[[Request], Awaitable[Principal]]:
        async def _admit(request: Request) -> Principal:
            principal = await authenticate(request)
            request.state.principal = principal
            if permission != ANY_TOKEN and not principal.allows(permission):
                raise ApiError(ErrorCode.permission_denied, f"this token lacks the {permission} permission")
            await limiter.admit(principal.org_id)
            return principal

        return _admit

    return authorize
