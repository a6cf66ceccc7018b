"""DNS-rebinding protection on ``/mcp``: the Host and Origin policy, and the server enforcing it.

The policy is checked as properties over generated names and ports; the server is
checked as deployed: under uvicorn in development (loopback names on any port pass),
and as the production app behind its public name (only that name passes).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from memory_bank.app import create_app
from memory_bank.mcp.origins import LOOPBACK_NAMES, AllowedOrigins
from memory_bank.settings import Profile, Settings
from memory_bank.store.tokens import TokenStore
from support.mcp_live import LiveServer, live_server

PUBLIC = "https://memory.example.com"
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
ACCEPT = {"Accept": "application/json, text/event-stream"}

development = AllowedOrigins("http://127.0.0.1:8000", allow_loopback=True)
production = AllowedOrigins(PUBLIC, allow_loopback=False)

labels = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,14}[a-z0-9])?", fullmatch=True)
domains = st.lists(labels, min_size=2, max_size=4).map(".".join).filter(lambda d: d not in {"memory.example.com", "127.0.0.1"})
ports = st.integers(min_value=1, max_value=65535)
schemes = st.sampled_from(["http", "https"])


def bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


@given(domain=domains, port=st.none() | ports, scheme=schemes)
def test_another_name_is_never_allowed(domain: str, port: int | None, scheme: str) -> None:
    authority = domain if port is None else f"{domain}:{port}"
    for policy in (development, production):
        assert not policy.host_allowed(authority)
        assert not policy.origin_allowed(f"{scheme}://{authority}")


@given(name=st.sampled_from(sorted(LOOPBACK_NAMES)), port=st.none() | ports, scheme=schemes)
def test_loopback_on_any_port_only_in_development(name: str, port: int | None, scheme: str) -> None:
    authority = bracketed(name) if port is None else f"{bracketed(name)}:{port}"
    assert development.host_allowed(authority) and development.origin_allowed(f"{scheme}://{authority}")
    assert not production.host_allowed(authority) and not production.origin_allowed(f"{scheme}://{authority}")


@given(port=ports)
def test_the_public_name_only_at_its_port_and_scheme(port: int) -> None:
    for host in ("memory.example.com", "Memory.Example.COM", "memory.example.com:443"):
        assert production.host_allowed(host) and production.origin_allowed(f"https://{host}")
    assert production.host_allowed(f"memory.example.com:{port}") is (port == 443)
    assert production.origin_allowed(f"https://memory.example.com:{port}") is (port == 443)
    assert not production.origin_allowed("http://memory.example.com")


@given(extra=st.text(min_size=1, max_size=12))
def test_an_authority_with_more_in_it_is_refused(extra: str) -> None:
    for policy, host in ((development, "localhost"), (production, "memory.example.com")):
        assert not policy.host_allowed(f"{extra}@{host}")
        assert not policy.host_allowed(f"{host}/{extra}")
        assert not policy.origin_allowed(f"https://{host}/{extra}")


def test_no_origin_passes_a_null_or_missing_host_does_not() -> None:
    for policy in (development, production):
        assert policy.origin_allowed(None)
        assert not policy.origin_allowed("null")
        assert not policy.host_allowed(None) and not policy.host_allowed("")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("mcp-origins")) as live:
        yield live


def ping(server: LiveServer, token: str | None, **headers: str) -> httpx.Response:
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(server.mcp_url, json=PING, headers={**ACCEPT, **auth, **headers}, timeout=5)


def refused(response: httpx.Response) -> None:
    assert response.status_code == 403, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "permission_denied"


def test_a_rebound_name_is_refused_even_with_a_valid_token(server: LiveServer) -> None:
    token = server.token()
    refused(ping(server, token, Host="evil.example.com", Origin="http://evil.example.com"))
    refused(ping(server, token, Host="evil.example.com"))
    refused(ping(server, token, Origin="http://evil.example.com"))
    refused(ping(server, token, Origin="null"))


def test_the_check_comes_before_authentication(server: LiveServer) -> None:
    refused(ping(server, None, Host="evil.example.com"))
    refused(ping(server, "mb_not_a_token", Origin="http://evil.example.com"))


def test_loopback_names_pass_in_development_on_any_port(server: LiveServer) -> None:
    token = server.token()
    for host in ("localhost:3000", "127.0.0.1", "[::1]:6274"):
        response = ping(server, token, Host=host, Origin=f"http://{host}")
        assert response.status_code == 200 and response.json()["result"] == {}, (host, response.text)


def test_the_production_app_answers_only_its_public_name(tmp_path: Path) -> None:
    settings = Settings(env=Profile.production, database_url=f"sqlite:///{tmp_path / 'mb.db'}", public_url=PUBLIC)
    app = create_app(settings)
    token = TokenStore(app.state.engine).create("org-p", "ann", "agent-1", ["memory:read"])[0]
    headers = {**ACCEPT, "Authorization": f"Bearer {token}"}
    with TestClient(app, base_url=PUBLIC) as client:
        served = client.post("/mcp", json=PING, headers={**headers, "Origin": PUBLIC})
        local = client.post("/mcp", json=PING, headers={**headers, "Host": "localhost:8000"})
        local_page = client.post("/mcp", json=PING, headers={**headers, "Origin": "http://localhost:3000"})
    app.state.engine.dispose()
    assert served.status_code == 200 and served.json()["result"] == {}
    for response in (local, local_page):
        assert response.status_code == 403 and response.json()["code"] == "permission_denied"
