"""JWT access tokens from a configured OAuth 2.1 authorization server, beside the opaque ``mb_`` tokens.

The service is a resource server: it never issues these tokens, it checks them. The
authorization server's metadata (RFC 8414, else OpenID discovery) names its JWKS; both
are fetched with httpx and kept. A token whose ``kid`` is not among the kept keys makes
the JWKS be fetched again, at most once per ``oauth_jwks_refresh_seconds``, so a key the
server rotates in is accepted without a restart while a flood of made-up kids costs the
server one request per interval. Keys already held keep working while it is down.

What is checked (joserfc does the signature and the registered claims): the algorithm is
one of the pinned asymmetric ones, the ``typ`` header names an access token (RFC 9068:
an ID token of the same issuer is not one), the signature, ``iss``, ``exp``/``nbf`` with a small
leeway, and ``aud``: one of this resource's URLs (RFC 8707; ``audiences``). Scopes map
1:1 onto permissions (``memory:read`` ... ``memory:admin``); others (``openid``...) grant
nothing. The user, org and agent come from configurable claims and meet the same id
rules as ids minted by the CLI.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection
from time import monotonic
from typing import Any
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

import httpx
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from memory_bank.errors import BackendUnavailable, Unauthorized
from memory_bank.owner_ids import check_owner_id
from memory_bank.security.principal import Principal
from memory_bank.security.tokens import PERMISSIONS, TOKEN_PREFIX
from memory_bank.settings import Settings, jwt_type

log = logging.getLogger(__name__)

#: Seconds an exchange with the authorization server may take before it counts as down.
FETCH_TIMEOUT_SECONDS = 5.0
#: The principal's ``token_id`` (audit) for a JWT: ``oauth:`` and its ``jti`` (else its subject).
TOKEN_ID_PREFIX = "oauth:"


def looks_like_jwt(token: str) -> bool:
    """A JWS compact serialisation (three dot-separated parts), not an ``mb_`` token."""
    return not token.startswith(TOKEN_PREFIX) and token.count(".") == 2


def metadata_urls(issuer: str) -> list[str]:
    """Where ``issuer``'s metadata may be: RFC 8414's well-known URL (inserted before the
    issuer's path), then OpenID discovery's (appended to it)."""
    parts = urlsplit(issuer)
    origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    return [f"{origin}/.well-known/oauth-authorization-server{path}", f"{origin}{path}/.well-known/openid-configuration"]


def audiences(public_url: str, mcp_path: str) -> list[str]:
    """This resource's identifiers a token may be issued for: the service and its MCP endpoint
    (one token serves both doors, which run the same operations)."""
    base = public_url.rstrip("/")
    return [base, base + mcp_path]


class AuthorizationServerDown(BackendUnavailable):
    """The authorization server did not answer, and no key held can check the token."""


class OAuthTokens:
    """Verifies JWT access tokens of one issuer into principals."""

    def __init__(self, settings: Settings, audience: Collection[str]) -> None:
        if settings.oauth_issuer is None:
            raise ValueError("OAuthTokens needs MEMORY_BANK_OAUTH_ISSUER")
        self.issuer = settings.oauth_issuer
        self._algorithms = list(settings.oauth_algorithms)
        self._token_types = frozenset(settings.oauth_token_types)
        self._user_claim, self._org_claim = settings.oauth_user_claim, settings.oauth_org_claim
        self._agent_claim = settings.oauth_agent_claim
        self._refresh_seconds = settings.oauth_jwks_refresh_seconds
        self._claims = jwt.JWTClaimsRegistry(
            leeway=settings.oauth_leeway_seconds,
            iss={"essential": True, "value": self.issuer},
            aud={"essential": True, "values": list(audience)},
            exp={"essential": True},
        )
        self._jwks_uri: str | None = None
        self._keys: KeySet | None = None
        self._fetched_at: float | None = None
        self._unreachable = False  # the last fetch failed
        #: One fetch at a time per event loop: requests that come while it runs wait for it and
        #: read what it brought (they were refused while the first request's fetch was out).
        self._fetching: WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = WeakKeyDictionary()

    async def verify(self, token: str) -> Principal:
        """The principal ``token`` stands for; ``unauthorized`` saying what is wrong, or
        ``backend_unavailable`` when the keys to check it cannot be had."""
        try:
            header = jws.extract_compact(token.encode("ascii")).headers()
        except (JoseError, ValueError, UnicodeError):
            raise Unauthorized("the bearer token is not a valid JWT") from None
        if header.get("alg") not in self._algorithms:
            raise Unauthorized(f"the token's algorithm is not accepted; accepted: {', '.join(self._algorithms)}")
        typ = header.get("typ")
        if not isinstance(typ, str) or jwt_type(typ) not in self._token_types:
            raise Unauthorized(
                f"the token's typ header is {typ!r}, not an access token's; accepted: {', '.join(sorted(self._token_types))}"
            )
        keys = await self._keys_for(header.get("kid"))
        try:
            decoded = jwt.decode(token, keys, algorithms=self._algorithms)
            self._claims.validate(decoded.claims)
        except JoseError as error:
            raise Unauthorized(f"the access token is not valid: {error.description or error.error}") from None
        except RecursionError:  # claims nested deeper than the JSON parser reads, however well signed
            raise Unauthorized("the access token's claims are nested too deep to read") from None
        return self._principal(decoded.claims)

    async def _keys_for(self, kid: Any) -> KeySet:
        """The key set, fetched again first when it lacks ``kid`` and the last fetch is old enough;
        while the last fetch failed, a token whose key is not held cannot be judged (503)."""
        if self._keys is not None and _holds(self._keys, kid):
            return self._keys
        arrived = monotonic()
        async with self._fetching.setdefault(asyncio.get_running_loop(), asyncio.Lock()):
            if self._keys is not None and _holds(self._keys, kid):  # a fetch this request waited for brought it
                return self._keys
            last = self._fetched_at
            # A fetch that ended while this request waited is its answer too, however short the
            # refresh interval: waiters behind a slow server do not each fetch in turn.
            if last is None or (last < arrived and monotonic() - last >= self._refresh_seconds):
                try:
                    self._keys, self._unreachable = await asyncio.wait_for(self._fetch_keys(), FETCH_TIMEOUT_SECONDS), False
                except Exception as error:  # noqa: BLE001 - whatever the server sent or failed to send, no keys came
                    log.warning("fetching the keys of %s failed: %s: %s", self.issuer, type(error).__name__, error)
                    self._unreachable = True
                self._fetched_at = monotonic()
        if self._unreachable:
            # The keys held still check the tokens they signed; this one may be signed by a new key.
            raise AuthorizationServerDown(f"the authorization server {self.issuer} is unreachable; try again shortly")
        if not _holds(self._keys, kid):
            raise Unauthorized("the token's signing key (kid) is not one the authorization server publishes")
        assert self._keys is not None  # _holds says so
        return self._keys

    async def _fetch_keys(self) -> KeySet:
        async with httpx.AsyncClient(timeout=FETCH_TIMEOUT_SECONDS) as client:
            if self._jwks_uri is None:
                self._jwks_uri = await self._discover(client)
            response = await client.get(self._jwks_uri)
            response.raise_for_status()
            return KeySet.import_key_set(response.json())

    async def _discover(self, client: httpx.AsyncClient) -> str:
        """The ``jwks_uri`` of the issuer's metadata, which must name this very issuer (RFC 8414 §3.3)."""
        for url in metadata_urls(self.issuer):
            response = await client.get(url)
            if response.status_code == 404:
                continue
            response.raise_for_status()
            metadata = response.json()
            if metadata.get("issuer") != self.issuer:
                raise ValueError(f"the metadata at {url} names issuer {metadata.get('issuer')!r}, not {self.issuer!r}")
            jwks_uri = metadata.get("jwks_uri")
            if isinstance(jwks_uri, str):
                return jwks_uri
            raise ValueError(f"the metadata at {url} has no jwks_uri")
        raise ValueError(f"no authorization server metadata at {' or '.join(metadata_urls(self.issuer))}")

    def _principal(self, claims: dict[str, Any]) -> Principal:
        scopes = _scopes(claims.get("scope"))
        user_id = self._owner_id("user", self._user_claim, claims.get(self._user_claim))
        org_id = self._owner_id("org", self._org_claim, claims.get(self._org_claim))
        agent = claims.get(self._agent_claim)
        agent_id = None if agent is None else self._owner_id("agent", self._agent_claim, agent)
        token_id = TOKEN_ID_PREFIX + str(claims.get("jti") or user_id)
        return Principal(
            token_id=token_id[:128],
            org_id=org_id,
            user_id=user_id,
            agent_id=agent_id,
            permissions=frozenset(scopes & PERMISSIONS),
            issuer=self.issuer,
        )

    @staticmethod
    def _owner_id(kind: str, claim: str, value: Any) -> str:
        if not isinstance(value, str):
            raise Unauthorized(f"the access token has no {claim} claim (string) naming its {kind}")
        try:
            return check_owner_id(kind, value)
        except ValueError as error:
            raise Unauthorized(f"the access token's {claim} claim: {error}") from None


def _scopes(claim: Any) -> set[str]:
    """RFC 9068's space-separated ``scope``; a list of strings too, as some servers send. Anything else grants nothing.

    Only U+0020 separates (RFC 6749 section 3.3): ``"memory:read\u00a0memory:admin"`` is one scope,
    which grants nothing, where ``str.split()`` read a no-break space as a separator and granted admin."""
    if isinstance(claim, str):
        return {scope for scope in claim.split(" ") if scope}
    if isinstance(claim, list):
        return {scope for scope in claim if isinstance(scope, str)}
    return set()


def _holds(keys: KeySet | None, kid: Any) -> bool:
    if keys is None:
        return False
    if kid is None:
        return len(keys.keys) == 1
    return any(key.kid == kid for key in keys)
