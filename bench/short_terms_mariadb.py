"""Terms the full-text index cannot see, on MariaDB: ``LIKE`` in SQL against reading the rows once.

    .venv/bin/python bench/short_terms_mariadb.py [--rows 30000] [--terms 32] [--mysql-url URL]

InnoDB FULLTEXT holds no token shorter than ``innodb_ft_min_token_size`` (3), so a search
for one- and two-letter terms cannot ask the index. This times, over one owner's
``--rows`` rows of ``search_text``-like text (the column's ``utf8mb4_unicode_ci``
collation, as in ``migrations/frozen.py``), each a median of three runs:

* ``like_1_ms``: one whole-term ``LIKE '% t %'`` over the rows;
* ``like_or_ms``: ``--terms`` of them ORed (what one pass for all the terms costs);
* ``regexp_ms``: the same terms as one ``REGEXP``;
* ``read_and_test_ms``: reading the rows and testing every term in Python, as
  ``search_lexical`` does on its sample.

None of the terms occur, the worst case: every test runs on every row. The bench creates a
``mb_test_bench_*`` database on the server (``MEMORY_BANK_TEST_MYSQL_URL``) and drops it.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent))

from memory_backends import mysql_database  # noqa: E402

RUNS = 3


def median_ms(call: Callable[[], object]) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=30_000)
    parser.add_argument("--terms", type=int, default=32)
    parser.add_argument("--mysql-url", default=os.environ.get("MEMORY_BANK_TEST_MYSQL_URL", "mysql+mysqldb://root@127.0.0.1:3306/test"))
    args = parser.parse_args()
    rng = random.Random(1)
    vocabulary = [f"w{n}ord" for n in range(3000)]
    texts = [" " + " ".join(rng.choices(vocabulary, k=40)) + f" pm {rng.randrange(30)} " for _ in range(args.rows)]
    terms = [f"{a}{b}" for a in "abcdefghijklmnopqrstuvwxyz" for b in "0123456789"][: args.terms]
    with mysql_database(args.mysql_url) as url:
        engine = sa.create_engine(url)
        with engine.begin() as connection:
            connection.exec_driver_sql(
                "CREATE TABLE t (pk INT AUTO_INCREMENT PRIMARY KEY, org VARCHAR(10), s TEXT COLLATE utf8mb4_unicode_ci,"
                " KEY (org)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
            )
            connection.execute(sa.text("INSERT INTO t (org, s) VALUES ('o', :s)"), [{"s": s} for s in texts])
        with engine.connect() as connection:

            def ask(condition: str) -> None:
                literal = condition.replace("%", "%%")  # the driver's own placeholders
                connection.exec_driver_sql(f"SELECT pk, s FROM t WHERE org = 'o' AND ({literal}) LIMIT 500").all()

            def read_and_test() -> None:
                rows = connection.exec_driver_sql("SELECT pk, s FROM t WHERE org = 'o'").all()
                padded = [f" {t} " for t in terms]
                [pk for pk, s in rows if any(p in s for p in padded)]

            figures = {
                "rows": args.rows,
                "terms": len(terms),
                "like_1_ms": median_ms(lambda: ask(f"s LIKE '% {terms[0]} %'")),
                "like_or_ms": median_ms(lambda: ask(" OR ".join(f"s LIKE '% {t} %'" for t in terms))),
                "regexp_ms": median_ms(lambda: ask(f"s REGEXP ' ({'|'.join(terms)}) '")),
                "read_and_test_ms": median_ms(read_and_test),
            }
        engine.dispose()
    for name, value in figures.items():
        print(f"{name:>18}  {value}")


if __name__ == "__main__":
    main()
