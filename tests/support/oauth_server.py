"""A real OAuth 2.1 authorization server on loopback, built from authlib, for the OAuth tests.

What an MCP client that speaks OAuth meets at a real provider: RFC 8414 metadata, RFC
7591 dynamic client registration, the authorization code grant with PKCE (S256
required) and refresh tokens (rotated on use) for clients that register for them, RFC
8707 ``resource`` (the code and the refresh token remember it, and the access token's
``aud`` is it), and RFC 9068 JWT access tokens signed with a key it publishes in its
JWKS. Consent is automatic for one test user, whose org and agent go into the token as
claims; ``consents`` can narrow what the person grants, one entry per authorization
(the last repeats), as a person unticking a scope would. ``rotate`` publishes a new
signing key, as a provider rotating keys does; ``jwks_fetches`` counts how often the
JWKS was read, for the refresh limits.

Flask serves it (authlib's server integration is Flask's) with werkzeug in a thread.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from authlib.common.security import generate_token
from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import grants
from authlib.oauth2.rfc6749.errors import OAuth2Error
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc8414 import AuthorizationServerMetadata
from authlib.oauth2.rfc9068 import JWTBearerTokenGenerator
from flask import Flask, g, jsonify
from joserfc import jwt
from joserfc.jwk import ECKey, Key, KeySet, RSAKey
from werkzeug.serving import make_server

from memory_bank.store.agents import AgentStore

SCOPES = ["memory:read", "memory:write", "memory:admin"]


class InvalidTargetError(OAuth2Error):  # type: ignore[misc]
    """RFC 8707 §2: the token request names another resource than the one authorized."""

    error = "invalid_target"


@dataclass(frozen=True)
class User:
    """The one person who consents, and the claims the resource server reads of them."""

    sub: str
    org_id: str
    agent_id: str | None = None

    def get_user_id(self) -> str:
        return self.sub


def agent_of(app: Any, user: User) -> User:
    """``user`` acting through an agent registered in the app's org, as an admin registers one."""
    return replace(user, agent_id=AgentStore(app.state.engine).create(user.org_id, "laptop").id)


@dataclass
class Client:
    """A dynamically registered client, as authlib's ``ClientMixin`` asks of one."""

    client_id: str
    client_secret: str | None
    metadata: dict[str, Any]

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str | None:
        uris = self.metadata.get("redirect_uris") or []
        return str(uris[0]) if uris else None

    def get_allowed_scope(self, scope: str) -> str:
        return " ".join(s for s in (scope or "").split() if s in SCOPES)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in (self.metadata.get("redirect_uris") or [])

    def check_client_secret(self, client_secret: str) -> bool:
        return self.client_secret is not None and secrets.compare_digest(client_secret, self.client_secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return endpoint != "token" or method == self.metadata.get("token_endpoint_auth_method", "client_secret_basic")

    def check_response_type(self, response_type: str) -> bool:
        return response_type in self.metadata.get("response_types", ["code"])

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.metadata.get("grant_types", ["authorization_code"])


@dataclass
class Code:
    """An authorization code: what the token request must match (client, redirect, PKCE, resource)."""

    code: str
    client_id: str
    redirect_uri: str
    scope: str
    user: User
    code_challenge: str | None
    code_challenge_method: str | None
    resource: str | None
    issued_at: float = field(default_factory=time.time)

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope


@dataclass
class Refresh:
    """A refresh token: what it may be exchanged for, and by whom."""

    refresh_token: str
    client_id: str
    scope: str
    user: User
    resource: str | None

    def get_scope(self) -> str:
        return self.scope

    def check_client(self, client: Client) -> bool:
        return client.client_id == self.client_id


class AuthorizationServerOnLoopback:
    """The server and its state; ``url`` is its issuer once ``running`` is entered."""

    def __init__(self, user: User, *, algorithm: str = "RS256") -> None:
        self.user = user
        self.algorithm = algorithm
        self.keys: list[Key] = [self._new_key()]
        self.clients: dict[str, Client] = {}
        self.codes: dict[str, Code] = {}
        self.refreshes: dict[str, Refresh] = {}
        self.jwks_fetches = 0
        self.jwks_delay_seconds = 0.0  # how long the JWKS takes to answer, as a slow provider's does
        self.consents: list[set[str]] = []
        self.url = ""

    def _new_key(self) -> Key:
        key: Key
        if self.algorithm.startswith("ES"):
            key = ECKey.generate_key("P-256", parameters={"alg": self.algorithm, "use": "sig"})
        else:
            key = RSAKey.generate_key(2048, parameters={"alg": self.algorithm, "use": "sig"})
        key.ensure_kid()  # the RFC 7638 thumbprint
        return key

    @property
    def signing_key(self) -> Key:
        return self.keys[-1]

    def rotate(self) -> Key:
        """Publish a new signing key beside the old ones and sign with it from now on."""
        self.keys.append(self._new_key())
        return self.signing_key

    def sign(self, claims: dict[str, Any], key: Key | None = None, header: dict[str, Any] | None = None) -> str:
        """A token signed as this server signs access tokens (a test varies the claims, key or header)."""
        key = key or self.signing_key
        return jwt.encode({"alg": self.algorithm, "kid": key.kid, "typ": "at+jwt", **(header or {})}, claims, key)

    def claims(self, audience: str, scope: str = "memory:read memory:write", **extra: Any) -> dict[str, Any]:
        """Valid claims for ``audience``, as the token endpoint would issue them."""
        now = int(time.time())
        claims = {"iss": self.url, "aud": audience, "sub": self.user.sub, "org_id": self.user.org_id, "scope": scope}
        claims |= {"iat": now, "exp": now + 600, "jti": secrets.token_hex(8), "client_id": "test"}
        if self.user.agent_id is not None:
            claims["agent_id"] = self.user.agent_id
        return claims | extra

    def consent(self, requested: str) -> str:
        """The part of the ``requested`` scope the person grants this time."""
        granted = (self.consents.pop(0) if len(self.consents) > 1 else self.consents[0]) if self.consents else set(SCOPES)
        return " ".join(scope for scope in requested.split() if scope in granted)

    def metadata(self) -> dict[str, Any]:
        document = AuthorizationServerMetadata(
            {
                "issuer": self.url,
                "authorization_endpoint": self.url + "/authorize",
                "token_endpoint": self.url + "/token",
                "registration_endpoint": self.url + "/register",
                "jwks_uri": self.url + "/jwks",
                "scopes_supported": SCOPES,
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
                "code_challenge_methods_supported": ["S256"],
            }
        )
        document.validate()
        return dict(document)

    def app(self) -> Flask:
        app = Flask(__name__)
        app.config["OAUTH2_SCOPES_SUPPORTED"] = SCOPES
        outer = self

        def save_token(token: dict[str, Any], req: Any) -> None:
            if "refresh_token" in token:
                refresh = Refresh(token["refresh_token"], req.client.client_id, token.get("scope", ""), req.user, g.resource)
                outer.refreshes[refresh.refresh_token] = refresh

        server = AuthorizationServer(app, query_client=self.clients.get, save_token=save_token)

        class TokenGenerator(JWTBearerTokenGenerator):  # type: ignore[misc]
            def get_jwks(self) -> KeySet:
                return KeySet([outer.signing_key])  # a set, so the token's header names its kid

            def get_audiences(self, client: Client, user: User, scope: str) -> str | list[str]:
                return g.resource or client.get_client_id()  # RFC 8707: the resource the code was granted for

            def get_extra_claims(self, client: Client, grant_type: str, user: User, scope: str) -> dict[str, Any]:
                return {"org_id": user.org_id} | ({"agent_id": user.agent_id} if user.agent_id else {})

        class CodeGrant(grants.AuthorizationCodeGrant):  # type: ignore[misc]
            TOKEN_ENDPOINT_AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")

            def save_authorization_code(self, code: str, req: Any) -> Code:
                data = req.payload.data
                saved = Code(
                    code, req.client.client_id, data.get("redirect_uri"), outer.consent(req.scope or ""), req.user,
                    data.get("code_challenge"), data.get("code_challenge_method"), data.get("resource"),
                )
                outer.codes[code] = saved
                return saved

            def query_authorization_code(self, code: str, client: Client) -> Code | None:
                found = outer.codes.get(code)
                if found is None or found.client_id != client.client_id or time.time() - found.issued_at > 300:
                    return None
                asked = self.request.payload.data.get("resource")
                if asked is not None and asked != found.resource:
                    raise InvalidTargetError()
                return found

            def delete_authorization_code(self, code: Code) -> None:
                outer.codes.pop(code.code, None)

            def authenticate_user(self, code: Code) -> User:
                g.resource = code.resource
                return code.user

        class RefreshGrant(grants.RefreshTokenGrant):  # type: ignore[misc]
            TOKEN_ENDPOINT_AUTH_METHODS = CodeGrant.TOKEN_ENDPOINT_AUTH_METHODS
            INCLUDE_NEW_REFRESH_TOKEN = True  # OAuth 2.1: a public client's refresh token is single-use

            def authenticate_refresh_token(self, refresh_token: str) -> Refresh | None:
                return outer.refreshes.get(refresh_token)

            def authenticate_user(self, refresh: Refresh) -> User:
                g.resource = refresh.resource
                return refresh.user

            def revoke_old_credential(self, refresh: Refresh) -> None:
                outer.refreshes.pop(refresh.refresh_token, None)

        class Registration(ClientRegistrationEndpoint):  # type: ignore[misc]
            def get_server_metadata(self) -> dict[str, Any]:
                return outer.metadata()

            def authenticate_token(self, req: Any) -> bool:
                return True  # open registration, as the MCP authorization spec expects

            def save_client(self, info: dict[str, Any], metadata: dict[str, Any], req: Any) -> Client:
                public = metadata.get("token_endpoint_auth_method") == "none"
                client = Client(info["client_id"], None if public else info["client_secret"], metadata)
                outer.clients[client.client_id] = client
                return client

        tokens = TokenGenerator(issuer=self.url, alg=self.algorithm, refresh_token_generator=lambda **_: generate_token(48))
        server.register_token_generator("default", tokens)
        server.register_grant(CodeGrant, [CodeChallenge(required=True)])
        server.register_grant(RefreshGrant)
        server.register_endpoint(Registration)

        @app.get("/.well-known/oauth-authorization-server")
        def metadata() -> Any:
            return jsonify(self.metadata())

        @app.get("/jwks")
        def jwks() -> Any:
            self.jwks_fetches += 1
            time.sleep(self.jwks_delay_seconds)
            return jsonify(KeySet(list(self.keys)).as_dict(private=False))

        @app.get("/authorize")
        def authorize() -> Any:
            g.resource = None
            grant = server.get_consent_grant(end_user=self.user)
            return server.create_authorization_response(grant_user=self.user, grant=grant)  # automatic consent

        @app.post("/token")
        def token() -> Any:
            g.resource = None
            return server.create_token_response()

        @app.post("/register")
        def register() -> Any:
            return server.create_endpoint_response(Registration.ENDPOINT_NAME)

        return app

    @contextmanager
    def running(self) -> Iterator[AuthorizationServerOnLoopback]:
        """Serve on a free loopback port for as long as this is entered."""
        app: list[Flask] = []
        httpd = make_server("127.0.0.1", 0, lambda environ, start: app[0](environ, start), threaded=True)
        self.url = f"http://127.0.0.1:{httpd.server_port}"  # the issuer: known once the port is
        app.append(self.app())
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            httpd.shutdown()
            thread.join(5)
