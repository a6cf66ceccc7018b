"""The start line names the database and the limiter, never a password, on both backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.engine import URL, make_url

from memory_bank.app import create_app
from memory_bank.observability.logging import START_LOGGER, describe_database, describe_limiter
from memory_bank.settings import Profile, Settings

SECRET = st.text(st.characters(blacklist_categories=["Cs", "Cc"]), min_size=8, max_size=40)


def start_line(settings: Settings, capsys: pytest.CaptureFixture[str], *, stdio: bool = False) -> dict[str, str]:
    with TestClient(create_app(settings, stdio=stdio)):
        pass
    (entry,) = [json.loads(line) for line in capsys.readouterr().err.splitlines() if START_LOGGER in line]
    return entry


def test_the_start_line_names_the_database_it_opened(
    database_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    entry = start_line(Settings(env=Profile.staging, database_url=database_url), capsys)
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        assert entry["database"] == f"SQLite {tmp_path / 'memory-bank.db'}"
    else:
        port = f":{url.port}" if url.port else ""
        assert entry["database"] == f"mysql {url.host}{port}/{url.database}"
    assert (entry["profile"], entry["limiter"], entry["public_url"]) == ("staging", "in-process", "http://127.0.0.1:8000")
    assert "oauth_issuer" not in entry


def test_the_start_line_names_the_trusted_authorization_server(database_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    entry = start_line(Settings(env=Profile.staging, database_url=database_url, oauth_issuer="https://auth.example.com"), capsys)
    assert entry["oauth_issuer"] == "https://auth.example.com"
    assert entry["message"].endswith(", OAuth tokens from https://auth.example.com")


def test_the_stdio_start_line_names_no_url_and_no_authorization_server(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``memory-bank mcp`` is reached at no URL, and acts as one token of the database."""
    settings = Settings(env=Profile.staging, database_url=f"sqlite:///{tmp_path / 'm.db'}", oauth_issuer="https://auth.example.com")
    entry = start_line(settings, capsys, stdio=True)
    assert entry["message"].endswith(", rate limits in-process, MCP over stdio") and entry["transport"] == "stdio"
    assert "public_url" not in entry and "oauth_issuer" not in entry


def test_a_relative_sqlite_file_is_shown_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert describe_database(make_url("sqlite:///memory.db")) == f"SQLite {tmp_path / 'memory.db'}"


@given(user=st.text(min_size=1, max_size=10), password=SECRET)
def test_a_mysql_password_is_never_shown(user: str, password: str) -> None:
    url = URL.create("mysql+mysqldb", username=user, password=password, host="db.internal", port=3307, database="memory")
    shown = describe_database(url)
    assert shown == "mysql db.internal:3307/memory" and password not in shown


@given(password=SECRET)
def test_a_redis_password_is_never_shown(password: str) -> None:
    url = URL.create("redis", username="default", password=password, host="cache", port=6380, database="2")
    shown = describe_limiter(url.render_as_string(hide_password=False))
    assert shown == "Redis cache:6380/2" and password not in shown
