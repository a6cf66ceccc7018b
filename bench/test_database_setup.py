"""What one test's database costs to set up, per way of making it (median of ``--rounds``).

    MEMORY_BANK_TEST_MYSQL_URL=mysql+mysqldb://root@127.0.0.1:3306/test \\
        .venv/bin/python bench/test_database_setup.py [--rounds 10]

SQLite: migrating a new file, the no-op upgrade every later start runs, copying a
migrated template file. MariaDB/MySQL (when the variable is set): migrating a new
database, the no-op upgrade, emptying a migrated database (``DELETE`` per table), and
a new database built from a migrated one's ``SHOW CREATE TABLE`` (create and drop).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.backends import MYSQL_URL_VARIABLE, empty_tables, fresh_database, mysql_server  # noqa: E402
from support.templates import SqliteTemplate, migrate  # noqa: E402


def median_ms(rounds: int, step: Callable[[int], object]) -> float:
    times = []
    for n in range(rounds):
        start = time.perf_counter()
        step(n)
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1000, 1)


def sqlite(rounds: int) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp())
    template = SqliteTemplate.create(folder)
    return {
        "migrate a new file": median_ms(rounds, lambda n: migrate(f"sqlite:///{folder / f'new{n}.db'}")),
        "no-op upgrade": median_ms(rounds, lambda n: migrate(f"sqlite:///{folder / f'new{n}.db'}")),
        "copy the template": median_ms(rounds, lambda n: template.copy(folder / f"copy{n}.db")),
    }


def rebuilt(url: str, tables: list[str]) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql("SET FOREIGN_KEY_CHECKS = 0")
        for table in tables:
            connection.exec_driver_sql(table)
    engine.dispose()


def mysql(rounds: int) -> dict[str, float]:
    server = mysql_server()

    def migrate_new(_: int) -> None:
        with fresh_database(server) as url:
            migrate(url)

    def copy_and_drop(_: int) -> None:
        with fresh_database(server) as url:
            rebuilt(url, tables)

    with fresh_database(server) as template:
        migrate(template)
        engine = sa.create_engine(template)
        with engine.connect() as connection:
            names = sa.inspect(connection).get_table_names()
            tables = [connection.exec_driver_sql(f"SHOW CREATE TABLE `{name}`").one()[1] for name in names]
        engine.dispose()
        return {
            "migrate a new database (and drop it)": median_ms(rounds, migrate_new),
            "no-op upgrade": median_ms(rounds, lambda _: migrate(template)),
            "empty the migrated database": median_ms(rounds, lambda _: empty_tables(template)),
            "new database from the template's DDL (and drop it)": median_ms(rounds, copy_and_drop),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10)
    rounds = parser.parse_args().rounds
    for backend, figures in [("sqlite", sqlite(rounds))] + ([("mysql", mysql(rounds))] if os.environ.get(MYSQL_URL_VARIABLE) else []):
        for what, ms in figures.items():
            print(f"{backend:6} {what:52} {ms:8.1f} ms")


if __name__ == "__main__":
    main()
