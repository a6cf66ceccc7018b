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

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from memory_bank.api.bodies import in_process_call
from memory_bank.api.problems import HttpRefusal, problem_response
from memory_bank.did_you_mean import closest
from memory_bank.errors import PermissionDenied, Unauthorized
from memory_bank.security.oauth import OAuthTokens, looks_like_jwt
from memory_bank.security.principal import Principal
from memory_bank.security.rate_limit import RateLimiter
from memory_bank.security.tokens import NOT_VALID
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


#: What every refusal for want of a bearer token ends with.
SEND_BEARER = "send Authorization: Bearer <token>"

#: Authorization schemes clients send by mistake, named back (in this spelling) when one is the
#: scheme sent: Basic from curl's ``-u``, Token and ApiKey from other APIs' docs.
KNOWN_SCHEMES = ("Basic", "Digest", "Negotiate", "NTLM", "DPoP", "OAuth", "Token", "ApiKey", "Api-Key", "Key", "JWT")

#: Headers other APIs read a token from; one sent instead of Authorization is named back (never its value).
TOKEN_HEADERS = ("X-API-Key", "Api-Key", "X-Auth-Token", "X-Access-Token")

#: What a value is wrapped in when its first or last character is one of these: a token has none of them.
_WRAPPERS = {'"': "quotes", "'": "quotes", "`": "backticks", "<": "angle brackets", ">": "angle brackets"}


def _wrapper(text: str) -> str | None:
    """``quotes`` when ``text`` starts or ends with one (``"mb_..."``), and so on for ``_WRAPPERS``; else None."""
    return _WRAPPERS.get(text[:1]) or _WRAPPERS.get(text[-1:])


def no_bearer_token(request: Request) -> str:
    """Why ``bearer_token`` found no token in the request, and what to send instead.

    A recognisable mistake is named: a token in an ``X-API-Key`` header, an empty header, a
    scheme with a colon (``Bearer:``), a misspelt scheme (``Baerer``), another scheme (``Basic``,
    ``Token``), a token with no scheme, a value in quotes. Nothing that could be the token or a
    part of it is named back: a scheme only when it is one of ``KNOWN_SCHEMES`` (in that spelling)
    or a misspelling of Bearer, a header by its name.
    """
    values = request.headers.getlist("authorization")
    if not values:
        other = next((name for name in TOKEN_HEADERS if name in request.headers), None)
        if other is None:
            return SEND_BEARER
        return f"the token came in an {other} header, which is not read here; {SEND_BEARER} instead"
    value = values[0].strip()
    wrapped = _WRAPPERS.get(value[:1])
    if wrapped is not None:
        return f"the Authorization header's value is in {wrapped}; {SEND_BEARER}, with no {wrapped}"
    words = value.split()
    if not words:
        return f"the Authorization header is empty; {SEND_BEARER}"
    scheme, folded = words[0], words[0].casefold()
    known = next((name for name in KNOWN_SCHEMES if name.casefold() == folded), None)
    if folded == "bearer" and len(words) == 1:
        return f"the Authorization header has the Bearer scheme but no token; {SEND_BEARER}"
    if folded == "bearer":  # ``bearer_token`` reads the token after a space only
        return f"the Authorization header separates Bearer from the token with something other than a space; {SEND_BEARER}"
    if folded.startswith("bearer:"):
        return f"the scheme is written with a colon (Bearer:); {SEND_BEARER}, with a space and no colon"
    if known is not None:
        return f"the Authorization scheme is {known}, and this service reads Bearer tokens only; {SEND_BEARER}"
    if closest(folded, ["bearer"]) is not None:
        return f"the Authorization scheme {scheme} is not Bearer; did you mean Bearer? {SEND_BEARER}"
    if len(words) == 1:
        return f"the Authorization header holds a token with no scheme; {SEND_BEARER}, the word Bearer before the token"
    return f"the Authorization scheme is not Bearer; {SEND_BEARER}"


def challenge(public_url: str, *, error: str | None = None, scope: str | None = None) -> dict[str, str]:
    """The ``WWW-Authenticate`` header of a refusal (RFC 6750 §3): where to discover how to get a
    token (RFC 9728), what was wrong with the one sent, and for ``insufficient_scope`` the scope to ask for."""
    value = f'Bearer resource_metadata="{public_url.rstrip("/")}{RESOURCE_METADATA_PATH}"'
    if error is not None:
        value += f', error="{error}"'
    if scope is not None:
        value += f', scope="{scope}"'
    return {"WWW-Authenticate": value}


async def principal_of(tokens: TokenStore, token: str, oauth: OAuthTokens | None = None) -> Principal:
    """Whose bearer ``token`` is, or ``unauthorized`` saying what is wrong with it.

    The one token check of both doors: the REST routes and the MCP transport. A JWT goes to
    the authorization server's keys when one is configured (``security.oauth``), any other
    token to the token table. A token in quotes (``Bearer "mb_..."``) is told so, not looked up:
    no token has a quote in it.
    """
    wrapped = _wrapper(token)
    if wrapped is not None:
        raise Unauthorized(f"the bearer token is in {wrapped}; {SEND_BEARER}, with no {wrapped} around the token")
    first, _, rest = token.partition(" ")
    if rest and first.casefold() == "bearer":  # "Bearer mb_..." pasted where the scheme is added (Swagger UI's Authorize)
        raise Unauthorized(f"the Authorization header says Bearer twice; {SEND_BEARER}, the word once before the token")
    if oauth is not None and looks_like_jwt(token):
        return await oauth.verify(token)
    principal = await run_in_threadpool(tokens.verify, token)
    if principal is None:
        raise Unauthorized(NOT_VALID)
    return principal


async def challenged_principal(tokens: TokenStore, request: Request, oauth: OAuthTokens | None, public_url: str) -> Principal:
    """Whose the request's bearer token is (``bearer_token``, ``principal_of``; ``no_bearer_token`` says why
    there is none), a refusal carrying the challenge a client discovers the authorization server by:
    ``invalid_token`` unless no bearer token was sent."""
    token: str | None = None
    try:
        token = bearer_token(request)
        if token is None:
            raise Unauthorized(no_bearer_token(request))
        return await principal_of(tokens, token, oauth)
    except Unauthorized as refused:
        sent = token is not None or len(request.headers.getlist("authorization")) > 1
        error = "invalid_token" if sent else None
        raise HttpRefusal(refused, headers=challenge(public_url, error=error)) from None


def install_write_refusals(app: FastAPI, public_url: str) -> None:
    """A token refused by a write's own transaction (``store.fence.writing_as``: revoked, rotated
    or expired since the request's token check) is answered as that check would have answered it,
    challenge included."""

    async def refused(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, Unauthorized)
        return problem_response(request, HttpRefusal(exc, headers=challenge(public_url, error="invalid_token")))

    app.add_exception_handler(Unauthorized, refused)


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
