"""Migrations: the migrated schema is the models' schema, and ``memory-bank db upgrade`` applies it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel
from typer.testing import CliRunner

from memory_bank.cli import app
from memory_bank.settings import get_settings
from memory_bank.store import migrations
from memory_bank.store.database import create_schema, make_engine


def _modelled(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    """Compare what the models declare; the search backends' own objects (FTS5 tables, ft_content) are not models."""
    return not (reflected and compare_to is None)


def test_migrated_schema_matches_the_models(engine: Engine) -> None:
    """A model changed without a new revision fails here (write one in store/migrations/versions)."""
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True, "include_object": _modelled})
        assert compare_metadata(context, SQLModel.metadata) == []


def test_db_upgrade_command(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = make_engine(database_url)
    with engine.begin() as connection:  # start from nothing, as a new deployment does
        SQLModel.metadata.drop_all(connection)
        connection.exec_driver_sql("DROP TABLE IF EXISTS alembic_version")
        if engine.dialect.name == "sqlite":
            connection.exec_driver_sql("DROP TABLE IF EXISTS memory_fts")
    engine.dispose()
    monkeypatch.setenv("MEMORY_BANK_DATABASE_URL", database_url)
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        first = runner.invoke(app, ["db", "upgrade"])
        assert first.exit_code == 0, first.output
        assert first.stdout.strip() == migrations.head() and "upgraded from an empty database" in first.stderr
        again = runner.invoke(app, ["db", "upgrade"])
        assert again.stdout.strip() == migrations.head() and "up to date" in again.stderr
    finally:
        get_settings.cache_clear()


def test_starts_racing_on_a_fresh_sqlite_file_migrate_once(tmp_path: Path) -> None:
    """Processes starting at once on one file (the MySQL case is in test_mysql_search)."""
    engines = [make_engine(f"sqlite:///{tmp_path / 'race.db'}") for _ in range(4)]
    try:
        with ThreadPoolExecutor(len(engines)) as pool:
            results = list(pool.map(create_schema, engines))
        assert sorted(results, key=str) == [(migrations.head(), migrations.head())] * 3 + [(None, migrations.head())]
    finally:
        for engine in engines:
            engine.dispose()
