"""Fixtures for store and API tests: each on SQLite and on MariaDB (``support.backends``), the real app, real tokens."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from memory_bank.app import create_app
from memory_bank.security.principal import Principal
from memory_bank.settings import Settings, get_settings
from memory_bank.store import MemoryStore
from memory_bank.store.database import make_engine, open_database
from memory_bank.store.tokens import TokenStore
from support import backends
from support.clients import DEFAULT_AGENT, READ_WRITE, MakeClient, MakeToken
from support.templates import SqliteTemplate, migrate


@pytest.fixture(scope="session", autouse=True)
def user_data_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The default database lives in the user data directory: tests, and the servers they
    start, get one of their own so that they never write into the real one."""
    home = tmp_path_factory.mktemp("xdg-data")
    previous = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(home)
    yield home
    if previous is None:
        del os.environ["XDG_DATA_HOME"]
    else:
        os.environ["XDG_DATA_HOME"] = previous


@pytest.fixture
def stdio_env(tmp_path: Path) -> dict[str, str]:
    """Environment for ``memory-bank mcp`` (``support.mcp_live.MEMORY_BANK``) on a fresh database, with a read/write token."""
    database_url = f"sqlite:///{tmp_path / 'memory-bank.db'}"
    engine = open_database(Settings(database_url=database_url))
    token, _ = TokenStore(engine).create("acme", "ann", "laptop", ["memory:read", "memory:write"])
    engine.dispose()
    return {
        "MEMORY_BANK_DATABASE_URL": database_url,
        "MEMORY_BANK_MCP_ALLOW_STDIO": "true",
        "MEMORY_BANK_TOKEN": token,
    }


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> SqliteTemplate:
    return SqliteTemplate.create(tmp_path_factory.mktemp("sqlite-template"))


@pytest.fixture(scope="session")
def mysql_run_database() -> Iterator[str]:
    """This run's own MariaDB/MySQL database, migrated once; each test empties it (``support.templates``)."""
    with backends.fresh_database(backends.mysql_server()) as url:
        migrate(url)
        yield url


@pytest.fixture(params=["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Every test that uses the database runs once per backend, each time on an empty, migrated one."""
    if request.param == "sqlite":
        template: SqliteTemplate = request.getfixturevalue("sqlite_template")
        return template.copy(tmp_path / "memory-bank.db")
    url: str = request.getfixturevalue("mysql_run_database")
    backends.empty_tables(url)
    return url


@pytest.fixture
def cli(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[CliRunner]:
    """The CLI (in process) on this test's database, SQLite and MariaDB."""
    monkeypatch.setenv("MEMORY_BANK_DATABASE_URL", database_url)
    get_settings.cache_clear()
    yield CliRunner()
    get_settings.cache_clear()


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url)


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    """An engine on the test's database, already migrated (``support.templates``)."""
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


@pytest.fixture
def store(engine: Engine) -> MemoryStore:
    return MemoryStore(engine)


@pytest.fixture
def make_principal() -> Callable[..., Principal]:
    """``make_principal(org="acme", user="ann", agent=None)``: a caller for store-level tests."""

    def make(org: str = "acme", user: str = "ann", agent: str | None = None) -> Principal:
        return Principal(token_id="t", org_id=org, user_id=user, agent_id=agent, permissions=frozenset(READ_WRITE))

    return make


@pytest.fixture
def app(settings: Settings) -> Iterator[FastAPI]:
    app = create_app(settings)
    yield app
    app.state.engine.dispose()


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    """An unauthenticated client; send your own Authorization header."""
    with TestClient(app) as client:
        yield client


@pytest.fixture
def make_token(engine: Engine) -> MakeToken:
    """``make_token(org, user, perms=READ_WRITE, agent="agent-1")`` -> bearer token plaintext.

    Writes need an agent (DESIGN §6), so tokens are bound to one unless a test passes
    ``agent=None`` to act agent-less.
    """
    tokens = TokenStore(engine)

    def make(org: str, user: str, perms: Iterable[str] = READ_WRITE, agent: str | None = DEFAULT_AGENT) -> str:
        return tokens.create(org, user, agent, perms)[0]

    return make


@pytest.fixture
def make_client(app: FastAPI, client: TestClient, make_token: MakeToken) -> MakeClient:
    """``make_client(org, user, perms=READ_WRITE, agent="agent-1")`` -> a client acting as that user."""

    def make(org: str, user: str, perms: Iterable[str] = READ_WRITE, agent: str | None = DEFAULT_AGENT) -> TestClient:
        return TestClient(app, headers={"Authorization": f"Bearer {make_token(org, user, perms, agent)}"})

    return make
