"""Each test's database starts migrated: the run migrates once, tests get it empty.

Migrating is the slow part of setting a database up (Alembic loads its scripts and
walks every revision). SQLite tests get a copy of a template file migrated once per
run; MariaDB/MySQL tests share the run's database, migrated once and emptied before
each test (``backends.empty_tables``), because there emptying takes milliseconds
and a new database per test costs more than its migration saves (docs/decisions).
Tests of the migrations themselves start from nothing instead (``test_migrations``,
``test_keypath_invariant``, the replica races and the index heal in
``test_mysql_search``): a test that alters the schema would alter it for every test after it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from memory_bank.store.database import create_schema, make_engine


def migrate(url: str) -> None:
    """Bring the database at ``url`` to the head revision, search index included, as a start does."""
    engine = make_engine(url)
    try:
        create_schema(engine)
    finally:
        engine.dispose()


@dataclass(frozen=True)
class SqliteTemplate:
    """A migrated SQLite file; a copy of the file is a migrated database."""

    path: Path

    @classmethod
    def create(cls, folder: Path) -> SqliteTemplate:
        path = folder / "template.db"
        migrate(f"sqlite:///{path}")  # the last connection closed checkpoints the WAL into the file
        return cls(path)

    def copy(self, target: Path) -> str:
        shutil.copyfile(self.path, target)
        return f"sqlite:///{target}"
