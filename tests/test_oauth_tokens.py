"""JWT access tokens from a real authorization server on loopback, checked by the app on both backends.

The tokens are signed here with keys the test makes (or the server's own, as its token
endpoint signs them); the server publishes the keys, so the app fetches its metadata and
JWKS over HTTP as it would from a provider.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from joserfc import jwt
from joserfc.jwk import RSAKey
from pydantic import ValidationError
from support.backends import free_port
from support.oauth_server import AuthorizationServerOnLoopback, User, agent_of

from memory_bank.app import create_app
from memory_bank.settings import Settings as ServiceSettings
from memory_bank.store.tokens import TokenStore

RESOURCE = "http://testserver"
MCP = RESOURCE + "/mcp"
METADATA = RESOURCE + "/.well-known/oauth-protected-resource"
USER = User(sub="ada", org_id="acme")


@pytest.fixture
def issuer() -> Iterator[AuthorizationServerOnLoopback]:
    with AuthorizationServerOnLoopback(USER).running() as server:
        yield server


def app_for(database_url: str, server: AuthorizationServerOnLoopback, issuer: str | None = None, **settings: Any) -> TestClient:
    """The app trusting ``server`` (or ``issuer``), with the server's user's agent registered in its org."""
    app = create_app(ServiceSettings(database_url=database_url, oauth_issuer=issuer or server.url, public_url=RESOURCE, **settings))
    server.user = agent_of(app, server.user)
    return TestClient(app)


@pytest.fixture
def client(database_url: str, issuer: AuthorizationServerOnLoopback) -> Iterator[TestClient]:
    with app_for(database_url, issuer) as client:
        yield client
    client.app.state.engine.dispose()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def save(client: TestClient, token: str, content: str = "the deploy key lives in the vault") -> Any:
    return client.post("/v1/memory", json={"content": content}, headers=bearer(token))


def assert_invalid_token(response: Any) -> None:
    assert response.status_code == 401, response.text
    assert response.json()["code"] == "unauthorized"
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith(f'Bearer resource_metadata="{METADATA}"') and 'error="invalid_token"' in challenge


def test_a_valid_token_saves_and_finds_with_either_audience(client: TestClient, issuer: AuthorizationServerOnLoopback) -> None:
    for audience in (RESOURCE, MCP):
        token = issuer.sign(issuer.claims(audience))
        saved = save(client, token, f"written with a token for {audience}")
        assert saved.status_code == 201, saved.text
        assert saved.json()["user_id"] == USER.sub and saved.json()["agent_id"] == issuer.user.agent_id
    found = client.get("/v1/memory/search", params={"q": "written token"}, headers=bearer(token)).json()["results"]
    assert len(found) == 2


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"exp": -120}, id="expired-beyond-the-leeway"),
        pytest.param({"nbf": +600}, id="not-valid-yet"),
        pytest.param({"aud": "https://another.example/mcp"}, id="for-another-resource"),
        pytest.param({"iss": "https://another-issuer.example"}, id="from-another-issuer"),
        pytest.param({"org_id": None}, id="naming-no-org"),
        pytest.param({"org_id": "acme "}, id="an-org-id-mariadb-would-pad"),
    ],
)
def test_a_token_that_fails_a_check_is_invalid(
    client: TestClient, issuer: AuthorizationServerOnLoopback, change: dict[str, Any]
) -> None:
    now = int(time.time())
    change = {k: now + v if k in ("exp", "nbf") else v for k, v in change.items()}  # seconds from now
    claims = {k: v for k, v in (issuer.claims(MCP) | change).items() if v is not None}
    assert_invalid_token(save(client, issuer.sign(claims)))


@pytest.mark.parametrize("typ", ["JWT", "dpop+jwt", "secevent+jwt", None])
def test_a_jwt_that_is_not_typed_as_an_access_token_is_invalid(
    client: TestClient, issuer: AuthorizationServerOnLoopback, typ: str | None
) -> None:
    """RFC 9068 4: an ID token, a DPoP proof or any other JWT the issuer signs for this
    audience is not an access token, on REST and on /mcp alike."""
    claims = issuer.claims(MCP)
    untyped = {"alg": issuer.algorithm, "kid": issuer.signing_key.kid}
    token = issuer.sign(claims, header={"typ": typ}) if typ else jwt.encode(untyped, claims, issuer.signing_key)
    refused = save(client, token)
    assert_invalid_token(refused)
    assert "typ" in refused.json()["detail"] and "at+jwt" in refused.json()["detail"]
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    over_mcp = client.post("/mcp", json=listing, headers=bearer(token) | {"Accept": "application/json, text/event-stream"})
    assert over_mcp.status_code == 401


@pytest.mark.parametrize("typ", ["at+jwt", "AT+JWT", "application/at+jwt"])
def test_an_access_token_typ_is_compared_as_rfc_7515_says(client: TestClient, issuer: AuthorizationServerOnLoopback, typ: str) -> None:
    assert save(client, issuer.sign(issuer.claims(MCP), header={"typ": typ})).status_code == 201


def test_an_operator_may_accept_a_provider_that_types_access_tokens_jwt(database_url: str, issuer: AuthorizationServerOnLoopback) -> None:
    with app_for(database_url, issuer, oauth_token_types=["at+jwt", "JWT"]) as client:
        assert save(client, issuer.sign(issuer.claims(MCP), header={"typ": "JWT"})).status_code == 201
        assert_invalid_token(save(client, issuer.sign(issuer.claims(MCP), header={"typ": "dpop+jwt"})))
    client.app.state.engine.dispose()


@pytest.mark.parametrize(("value", "parsed"), [("at+jwt", ["at+jwt"]), ("application/AT+JWT, JWT", ["at+jwt", "jwt"])])
def test_token_types_are_read_from_a_comma_separated_setting(value: str, parsed: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_BANK_OAUTH_TOKEN_TYPES", value)
    assert ServiceSettings().oauth_token_types == parsed


@pytest.mark.parametrize("value", ["", "at+jwt,,JWT", " "])
def test_an_empty_token_type_is_refused_at_start(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_BANK_OAUTH_TOKEN_TYPES", value)
    with pytest.raises(ValidationError, match="typ values without empty items"):
        ServiceSettings()


def test_a_token_expired_within_the_leeway_is_accepted(client: TestClient, issuer: AuthorizationServerOnLoopback) -> None:
    assert save(client, issuer.sign(issuer.claims(MCP, exp=int(time.time()) - 5))).status_code == 201


def _segment(value: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def test_alg_none_is_refused(client: TestClient, issuer: AuthorizationServerOnLoopback) -> None:
    header = {"alg": "none", "typ": "JWT", "kid": issuer.signing_key.kid}
    assert_invalid_token(save(client, f"{_segment(header)}.{_segment(issuer.claims(MCP))}."))


def test_hs256_signed_with_the_published_public_key_is_refused(client: TestClient, issuer: AuthorizationServerOnLoopback) -> None:
    """The classic confusion: an HMAC whose secret is the public key every client can download."""
    public_pem = issuer.signing_key.as_pem(private=False)
    signing_input = f"{_segment({'alg': 'HS256', 'kid': issuer.signing_key.kid})}.{_segment(issuer.claims(MCP))}"
    mac = hmac.new(public_pem, signing_input.encode(), hashlib.sha256).digest()
    forged = signing_input + "." + base64.urlsafe_b64encode(mac).rstrip(b"=").decode()
    assert_invalid_token(save(client, forged))


def test_a_token_signed_by_a_key_the_server_never_published_is_refused(
    client: TestClient, issuer: AuthorizationServerOnLoopback
) -> None:
    stranger = RSAKey.generate_key(2048, parameters={"kid": issuer.signing_key.kid})  # even with a known kid
    assert_invalid_token(save(client, issuer.sign(issuer.claims(MCP), key=stranger)))


def test_an_unknown_kid_refetches_the_keys_once_then_is_refused(
    database_url: str, issuer: AuthorizationServerOnLoopback, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a clock the test moves, so a slow machine cannot open a second refresh window mid-flood."""
    now = [time.monotonic()]
    monkeypatch.setattr("memory_bank.security.oauth.monotonic", lambda: now[0])
    strangers = [RSAKey.generate_key(2048, parameters={"kid": f"made-up-{n}"}) for n in range(5)]
    with app_for(database_url, issuer, oauth_jwks_refresh_seconds=30) as client:
        assert save(client, issuer.sign(issuer.claims(MCP))).status_code == 201
        fetched = issuer.jwks_fetches
        assert_invalid_token(save(client, issuer.sign(issuer.claims(MCP), key=strangers[0])))
        assert issuer.jwks_fetches == fetched, "the keys are too fresh to be fetched again"
        now[0] += 31  # the keys are old enough to be fetched again
        for stranger in strangers:  # a flood of made-up kids: one refetch, not five
            assert_invalid_token(save(client, issuer.sign(issuer.claims(MCP), key=stranger)))
        assert issuer.jwks_fetches == fetched + 1
        now[0] += 31
        assert_invalid_token(save(client, issuer.sign(issuer.claims(MCP), key=strangers[0])))
        assert issuer.jwks_fetches == fetched + 2
    client.app.state.engine.dispose()


def test_requests_that_come_while_the_keys_are_fetched_wait_for_that_fetch(
    database_url: str, issuer: AuthorizationServerOnLoopback
) -> None:
    """A fresh server's first requests arrive together: the first fetches the keys, the rest
    wait for that fetch (19 of 20 valid tokens were refused 401 while it was out)."""
    issuer.jwks_delay_seconds = 0.5
    with app_for(database_url, issuer) as client, ThreadPoolExecutor(20) as pool:
        tokens = [issuer.sign(issuer.claims(MCP)) for _ in range(20)]
        statuses = list(pool.map(lambda n: save(client, tokens[n], f"saved at a cold start, {n}").status_code, range(20)))
    client.app.state.engine.dispose()
    assert statuses == [201] * 20 and issuer.jwks_fetches == 1


def test_requests_behind_a_slow_key_fetch_share_its_answer_in_bounded_time(
    database_url: str, issuer: AuthorizationServerOnLoopback, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JWKS slower than the fetch deadline: the one fetch gives up, and the requests that
    waited for it get its answer (503), even with no refresh interval, instead of each
    fetching in turn (request k waited k+1 deadlines, a hostile pass)."""
    monkeypatch.setattr("memory_bank.security.oauth.FETCH_TIMEOUT_SECONDS", 0.5)
    issuer.jwks_delay_seconds = 3.0  # past the deadline: the fetch gives up
    with app_for(database_url, issuer, oauth_jwks_refresh_seconds=0) as client, ThreadPoolExecutor(4) as pool:
        tokens = [issuer.sign(issuer.claims(MCP)) for _ in range(4)]
        statuses = list(pool.map(lambda n: save(client, tokens[n], f"behind a slow fetch, {n}").status_code, range(4)))
    client.app.state.engine.dispose()
    # At most one fetch: on a loaded machine the one fetch can give up before its request reaches /jwks.
    assert statuses == [503] * 4 and issuer.jwks_fetches <= 1


@pytest.mark.parametrize("failure", [AttributeError("'list' object has no attribute 'get'"), RecursionError(), httpx.InvalidURL("bad")])
def test_whatever_breaks_the_key_fetch_is_503_not_500(
    database_url: str, issuer: AuthorizationServerOnLoopback, monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    """Metadata that is a JSON list, a malformed jwks_uri, a JWKS nested too deep: the keys
    could not be had, which is 503 to every request (the first got a 500, a hostile pass)."""

    async def broken(self: Any) -> Any:
        raise failure

    monkeypatch.setattr("memory_bank.security.oauth.OAuthTokens._fetch_keys", broken)
    with app_for(database_url, issuer) as client:
        assert [save(client, issuer.sign(issuer.claims(MCP)), f"try {n}").status_code for n in range(2)] == [503, 503]
    client.app.state.engine.dispose()


def test_claims_nested_past_the_parser_are_401_not_500(client: TestClient, issuer: AuthorizationServerOnLoopback) -> None:
    """Signed by the server itself: only it, or a holder of its key, can send one."""
    nested: Any = "deep"
    for _ in range(3000):
        nested = [nested]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)  # for the encoding here; the app reads with the default
    try:
        token = issuer.sign(issuer.claims(MCP) | {"extra": nested})
    finally:
        sys.setrecursionlimit(limit)
    assert_invalid_token(save(client, token))


def test_a_rotated_key_is_accepted_without_a_restart(database_url: str, issuer: AuthorizationServerOnLoopback) -> None:
    with app_for(database_url, issuer, oauth_jwks_refresh_seconds=0) as client:
        assert save(client, issuer.sign(issuer.claims(MCP)), "signed by the first key").status_code == 201
        old = issuer.signing_key
        issuer.rotate()
        assert save(client, issuer.sign(issuer.claims(MCP)), "signed by the new key").status_code == 201
        assert save(client, issuer.sign(issuer.claims(MCP), key=old), "the old key is still published").status_code == 201
    client.app.state.engine.dispose()


def test_a_token_lacking_a_scope_is_403_insufficient_scope_on_rest_and_mcp(
    client: TestClient, issuer: AuthorizationServerOnLoopback
) -> None:
    read_only = issuer.sign(issuer.claims(MCP, scope="memory:read openid"))
    refused = save(client, read_only)
    assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"
    assert refused.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{METADATA}", error="insufficient_scope", scope="memory:write"'
    )
    assert client.get("/v1/memory/search", params={"q": "vault"}, headers=bearer(read_only)).status_code == 200
    call = {
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "execute_capability", "arguments": {"name": "postMemory", "body": {"content": "x"}}},
    }
    headers = bearer(read_only) | {"Accept": "application/json, text/event-stream"}
    over_mcp = client.post("/mcp", json=call, headers=headers)
    assert over_mcp.status_code == 403
    assert 'error="insufficient_scope", scope="memory:write"' in over_mcp.headers["www-authenticate"]
    search = {**call, "params": {"name": "search_capabilities", "arguments": {"query": "save a memory"}}}
    assert client.post("/mcp", json=search, headers=headers).status_code == 200  # any token may search


@pytest.mark.parametrize("separator", ["\u00a0", "\t", "\n", "\u3000", "\u2028"])
def test_only_a_plain_space_separates_scopes(client: TestClient, issuer: AuthorizationServerOnLoopback, separator: str) -> None:
    """RFC 6749 section 3.3: scope tokens are split at U+0020 alone. Split at any whitespace,
    "memory:read<NBSP>memory:admin" (one scope to the authorization server) granted admin."""
    smuggled = issuer.sign(issuer.claims(MCP, scope=f"memory:read{separator}memory:admin"))
    assert client.get("/v1/admin/tokens", headers=bearer(smuggled)).status_code == 403
    assert client.get("/v1/memory/search", params={"q": "vault"}, headers=bearer(smuggled)).status_code == 403
    spaced = issuer.sign(issuer.claims(MCP, scope="  memory:read   memory:write "))
    assert client.get("/v1/memory/search", params={"q": "vault"}, headers=bearer(spaced)).status_code == 200


def test_another_orgs_memory_is_404_to_a_jwt(client: TestClient, issuer: AuthorizationServerOnLoopback) -> None:
    theirs = save(client, TokenStore(client.app.state.engine).create("globex", "ada", "bot", ["memory:read", "memory:write"])[0]).json()
    mine = issuer.sign(issuer.claims(MCP))  # same user name, another org
    assert client.get(f"/v1/memory/{theirs['id']}", headers=bearer(mine)).status_code == 404
    assert client.delete(f"/v1/memory/{theirs['id']}", headers=bearer(mine)).status_code == 404


def test_mb_tokens_keep_working_beside_jwts(client: TestClient) -> None:
    token = TokenStore(client.app.state.engine).create(USER.org_id, "bob", "desk", ["memory:read", "memory:write"])[0]
    assert save(client, token).status_code == 201


def test_the_resource_document_names_the_authorization_server(client: TestClient, issuer: AuthorizationServerOnLoopback) -> None:
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
        document = client.get(path).json()
        assert document["authorization_servers"] == [issuer.url]
        assert document["resource"] == MCP and document["scopes_supported"] == ["memory:admin", "memory:read", "memory:write"]


def test_an_unreachable_authorization_server_is_503_and_held_keys_keep_working(database_url: str) -> None:
    server = AuthorizationServerOnLoopback(USER)
    with server.running(), app_for(database_url, server, oauth_jwks_refresh_seconds=0) as client:
        token = server.sign(server.claims(MCP))
        assert save(client, token).status_code == 201  # keys fetched
    with client:  # the server is gone now
        assert save(client, token, "signed by a held key").status_code == 201
        rotated = server.sign(server.claims(MCP), key=server.rotate())
        down = save(client, rotated)
        assert down.status_code == 503 and down.json()["code"] == "backend_unavailable"
    client.app.state.engine.dispose()
    nowhere = f"http://127.0.0.1:{free_port()}"
    with app_for(database_url, server, issuer=nowhere) as cold:  # never reached: no keys at all
        for _ in range(2):  # the second within the refresh interval: not tried again, still 503 (not 401)
            down = save(cold, server.sign(server.claims(MCP) | {"iss": nowhere}))
            assert down.status_code == 503 and "unreachable" in down.json()["detail"]
    cold.app.state.engine.dispose()


@pytest.mark.parametrize("algorithms", ["none", "HS256", "RS256,HS512", ""])
def test_symmetric_or_no_algorithms_are_refused_at_start(algorithms: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_BANK_OAUTH_ALGORITHMS", algorithms)
    with pytest.raises(ValidationError, match="asymmetric"):
        ServiceSettings()


def test_algorithms_and_claim_names_are_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_BANK_OAUTH_ALGORITHMS", "ES256, EdDSA")
    monkeypatch.setenv("MEMORY_BANK_OAUTH_ORG_CLAIM", "tenant")
    configured = ServiceSettings()
    assert configured.oauth_algorithms == ["ES256", "EdDSA"] and configured.oauth_org_claim == "tenant"


def test_an_es256_server_with_its_own_org_claim(database_url: str) -> None:
    with AuthorizationServerOnLoopback(USER, algorithm="ES256").running() as server, app_for(
        database_url, server, oauth_org_claim="tenant"
    ) as client:
        claims = server.claims(RESOURCE)
        claims["tenant"] = claims.pop("org_id")
        assert save(client, server.sign(claims)).status_code == 201
        assert_invalid_token(save(client, server.sign(server.claims(RESOURCE))))  # org_id is not the claim now
    client.app.state.engine.dispose()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=5,
)
CLAIMS = ("exp", "nbf", "iat", "aud", "iss", "sub", "org_id", "agent_id", "scope", "jti")
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@PROPERTY
@given(changes=st.dictionaries(st.sampled_from(CLAIMS), JSON, min_size=1, max_size=4))
def test_any_claims_the_server_signs_are_accepted_or_refused_never_a_500(
    client: TestClient, issuer: AuthorizationServerOnLoopback, changes: dict[str, Any]
) -> None:
    response = save(client, issuer.sign(issuer.claims(MCP) | changes))
    assert response.status_code in (201, 401, 403), response.text
    if response.status_code == 401:
        assert 'error="invalid_token"' in response.headers["www-authenticate"]


SEGMENT = st.binary(max_size=60).map(lambda raw: base64.urlsafe_b64encode(raw).rstrip(b"=").decode())


@PROPERTY
@given(header=st.dictionaries(st.sampled_from(["alg", "kid", "typ", "crit", "b64"]), JSON, max_size=4), payload=SEGMENT, signature=SEGMENT)
def test_any_forged_token_is_401(
    client: TestClient, issuer: AuthorizationServerOnLoopback, header: dict[str, Any], payload: str, signature: str
) -> None:
    assert_invalid_token(save(client, f"{_segment(header)}.{payload}.{signature}"))
