"""The ``Authorize`` dependency the generated routes call before anything else.

``make_authorize(tokens, limiter, oauth, public_url)("memory:write")`` is a FastAPI dependency: it resolves
the bearer token to a ``Principal``, leaves it on ``request.state.principal`` (for
logging and audit), checks the permission the operation's ``x-capability`` names,
counts the call against the org's rate limit and returns the principal: the one
place every REST and MCP call passes through, so each admitted call is charged
exactly once. The permission is checked before the charge: a token refused for
lack of a permission must not spend the budget its org's other tokens live on.
The audit event is written around the call (``api.middleware.CallObserver``).

A call the app dispatches to itself (an MCP tool call) may arrive with its principal
already verified, on the ASGI scope (``api.bodies.InProcessCall``); that one is taken
as is, so a tool call verifies its token once. Headers cannot carry it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from memory_bank.api.bodies import in_process_call
from memory_bank.api.problems import HttpRefusal
from memory_bank.errors import PermissionDenied, Unauthorized
from memory_bank.security.oauth import OAuthTokens, looks_like_jwt
from memory_bank.security.principal import Principal
from memory_bank.security.rate_limit import RateLimiter
from memory_bank.store.tokens import TokenStore

#: The ``x-capability.permission`` of operations any valid token may call, whatever its
#: permissions: asking what one may call must work for every token, or a write-only
#: token could discover nothing.
ANY_TOKEN = "token:any"

#: The RFC 9728 protected-resource document every challenge points to.
RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource"

#: ``authorize(permission)`` returns a FastAPI dependency that authenticates the
#: request, checks ``permission`` and the rate limit, and yields the principal.
Authorize = Callable[[str], Callable[..., Awaitable[Principal]]]

def bearer_token(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; the scheme is case-insensitive.

    A request carrying the header more than once is ``Unauthorized``: Starlette reads the
    first copy, a proxy or the next service may read another, so which caller it is
    would depend on who asks.
    """
    values = request.headers.getlist("authorization")
    if len(values) > 1:
        raise Unauthorized(f"send one Authorization header; this request has {len(values)}")
    scheme, _, token = (values[0] if values else "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def challenge(public_url: str, *, error: str | None = None, scope: str | None = None) -> dict[str, str]:
    """The ``WWW-Authenticate`` header of a refusal (RFC 6750 §3): where to discover how to get a
    token (RFC 9728), what was wrong with the one sent, and for ``insufficient_scope`` the scope to ask for."""
    value = f'Bearer resource_metadata="{public_url.rstrip("/")}{RESOURCE_METADATA_PATH}"'
    if error is not None:
        value += f', error="{error}"'
    if scope is not None:
        value += f', scope="{scope}"'
    return {"WWW-Authenticate": value}


async def _principal_of(tokens: TokenStore, token: str | None, oauth: OAuthTokens | None = None) -> Principal:
    """Whose bearer ``token`` is (None: none was sent), or ``unauthorized`` saying which is wrong.

    The one token check of both doors: the REST routes and the MCP transport. A JWT goes to
    the authorization server's keys when one is configured (``security.oauth``), any other
    token to the token table.
    """
    if token is None:
        raise Unauthorized("send Authorization: Bearer <token>")
    if oauth is not None and looks_like_jwt(token):
        return await oauth.verify(token)
    principal = await run_in_threadpool(tokens.verify, token)
    if principal is None:
        raise Unauthorized("the bearer token is not valid")
    return principal


async def challenged_principal(tokens: TokenStore, request: Request, oauth: OAuthTokens | None, public_url: str) -> Principal:
    """Whose the request's bearer token is (``bearer_token``, ``_principal_of``), a refusal carrying the
    challenge a client discovers the authorization server by: ``invalid_token`` unless no bearer token was sent."""
    token: str | None = None
    try:
        token = bearer_token(request)
        return await _principal_of(tokens, token, oauth)
    except Unauthorized as refused:
        sent = token is not None or len(request.headers.getlist("authorization")) > 1
        error = "invalid_token" if sent else None
        raise HttpRefusal(refused, headers=challenge(public_url, error=error)) from None


def insufficient_scope(public_url: str, permission: str) -> HttpRefusal:
    """403 for a token lacking ``permission``, naming the scope that grants it (scopes are permissions)."""
    return HttpRefusal(
        PermissionDenied(f"this token lacks the {permission} permission"),
        headers=challenge(public_url, error="insufficient_scope", scope=permission),
    )


def make_authorize(tokens: TokenStore, limiter: RateLimiter, oauth: OAuthTokens | None, public_url: str) -> Authorize:
    async def authenticate(request: Request) -> Principal:
        call = in_process_call(request.scope)
        if call is not None and call.principal is not None:
            return call.principal  # verified by the MCP transport for this very call
        return await challenged_principal(tokens, request, oauth, public_url)

    def authorize(permission: str) -> Callable[[Request], Awaitable[Principal]]:
        async def _admit(request: Request) -> Principal:
            principal = await authenticate(request)
            request.state.principal = principal
            if permission != ANY_TOKEN and not principal.allows(permission):
                raise insufficient_scope(public_url, permission)
            await limiter.admit(principal.org_id)
            return principal

        return _admit

    return authorize
