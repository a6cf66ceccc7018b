"""An MCP client that speaks OAuth connects with no header: discovery, registration, authorization, token.

Every part is real: Memory Bank under uvicorn on loopback, the authlib authorization
server of ``support.oauth_server`` on another port, and the MCP Python SDK's
``OAuthClientProvider``. The client is handed nothing but the ``/mcp`` URL: the 401's
challenge leads it to the protected-resource document, that to the authorization
server's metadata, where it registers itself (RFC 7591), and the authorization code
grant with PKCE and the RFC 8707 ``resource`` gives it a JWT for this resource. The
person's consent is automatic; the redirect handler follows the authorization URL
with httpx and hands the code from the redirect to the callback handler.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
from joserfc import jwt
from joserfc.jwk import KeySet
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from support.mcp_live import LiveServer, live_server
from support.oauth_server import AuthorizationServerOnLoopback, User, agent_of

#: Where the authorization server sends the browser back; nothing listens there, the handler reads the redirect.
REDIRECT_URI = "http://127.0.0.1:9/callback"


class MemoryTokenStorage:
    """The SDK's ``TokenStorage``, kept in memory for one client."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class ConsentingBrowser:
    """The redirect and callback handlers: open the authorization URL, keep the code it redirects with."""

    def __init__(self) -> None:
        self.redirects: list[dict[str, list[str]]] = []

    async def open(self, authorization_url: str) -> None:
        async with httpx.AsyncClient() as http:
            response = await http.get(authorization_url)
        assert response.status_code == 302, response.text
        location = response.headers["location"]
        assert location.startswith(REDIRECT_URI)
        self.redirects.append(parse_qs(urlsplit(location).query))

    async def callback(self) -> AuthorizationCodeResult:
        query = self.redirects[-1]
        return AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0])


def ok(result: Any) -> Any:
    assert not result.is_error, result.content
    return result.structured_content


#: What the client registers with (RFC 7591): a public client, the code grant only.
CLIENT = OAuthClientMetadata(
    client_name="memory-bank oauth test",
    redirect_uris=[REDIRECT_URI],
    grant_types=["authorization_code"],
    response_types=["code"],
    token_endpoint_auth_method="none",
)


@dataclass
class Session:
    server: LiveServer
    client: Client
    storage: MemoryTokenStorage
    browser: ConsentingBrowser


@asynccontextmanager
async def oauth_session(authorization: AuthorizationServerOnLoopback, directory: Path) -> AsyncIterator[Session]:
    """Memory Bank trusting ``authorization``, and the SDK's OAuth client on its ``/mcp``: all it is told is the URL."""
    with authorization.running(), live_server(directory, oauth_issuer=authorization.url) as server:
        authorization.user = agent_of(server.app, authorization.user)
        storage, browser = MemoryTokenStorage(), ConsentingBrowser()
        provider = OAuthClientProvider(server.mcp_url, CLIENT.model_copy(deep=True), storage, browser.open, browser.callback)
        async with (
            httpx2.AsyncClient(auth=provider, timeout=30) as http,
            Client(streamable_http_client(server.mcp_url, http_client=http)) as client,
        ):
            yield Session(server, client, storage, browser)


async def test_an_oauth_mcp_client_connects_with_no_header_and_saves_and_finds_a_memory(tmp_path: Path) -> None:
    authorization = AuthorizationServerOnLoopback(User(sub="ada", org_id="acme"))
    async with oauth_session(authorization, tmp_path) as session:
        client = session.client
        found = ok(await client.call_tool("search_capabilities", {"query": "remember a fact"}))
        content = "the staging database is read-only on Fridays"
        saved = ok(await client.call_tool("execute_capability", {"name": "postMemory", "body": {"content": content}}))
        hits = ok(await client.call_tool("execute_capability", {"name": "getMemorySearch", "query": {"q": "staging Fridays"}}))
        async with httpx.AsyncClient() as plain:
            keys = KeySet.import_key_set((await plain.get(authorization.url + "/jwks")).json())
    storage = session.storage
    assert storage.tokens is not None
    claims = jwt.decode(storage.tokens.access_token, keys).claims
    assert "postMemory" in [card["name"] for card in found["results"]]
    assert saved["user_id"] == "ada" and saved["agent_id"] == authorization.user.agent_id
    assert [hit["id"] for hit in hits["results"]] == [saved["id"]]
    # It went the whole way: registered itself, was redirected once, got a token for this resource.
    assert storage.client_info is not None and list(authorization.clients) == [storage.client_info.client_id]
    assert len(session.browser.redirects) == 1
    assert claims["aud"] == session.server.mcp_url and claims["iss"] == authorization.url
    assert set(claims["scope"].split()) == {"memory:read", "memory:write", "memory:admin"}


async def test_a_token_lacking_the_write_scope_steps_up_and_the_write_goes_through(tmp_path: Path) -> None:
    """The person first grants reading only; the save meets 403 insufficient_scope, the client asks
    for memory:write, the person grants it, and the same call is retried with the new token."""
    authorization = AuthorizationServerOnLoopback(User(sub="ada", org_id="acme"))
    authorization.consents = [{"memory:read"}, {"memory:read", "memory:write"}]
    async with oauth_session(authorization, tmp_path) as session:
        ok(await session.client.call_tool("execute_capability", {"name": "getMemorySearch", "query": {"q": "anything"}}))
        assert session.storage.tokens is not None and session.storage.tokens.scope == "memory:read"
        body = {"content": "granted later"}
        saved = ok(await session.client.call_tool("execute_capability", {"name": "postMemory", "body": body}))
    assert saved["content"] == "granted later"
    assert len(session.browser.redirects) == 2
    assert set(session.storage.tokens.scope.split()) == {"memory:read", "memory:write"}
