"""What recording a token's last use costs a request: ``TokenStore.verify`` with and without the stamp.

    .venv/bin/python bench/token_last_use.py [--calls N] [--database-url URL] [--results [FILE]]

On a fresh SQLite file (or the given database, e.g. ``mysql+mysqldb://root@127.0.0.1/mb_bench``,
which must exist and is left migrated), one token is verified ``N`` times in a row. ``fresh``:
its last use is within the resolution, so verify only reads (the steady state of a busy token).
``stale``: the last use is pushed back past the resolution before each call, so every verify
also writes the stamp (what one call a minute of each token pays). Per-call median and p95 in
microseconds, and the writes the ``fresh`` calls made (always 0: the bound). ``--results``
rewrites this run's section of ``evals/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa

from memory_bank.security.tokens import LAST_USED_RESOLUTION
from memory_bank.settings import Settings
from memory_bank.store.database import open_database
from memory_bank.store.tables import TokenRow
from memory_bank.store.tokens import TokenStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "evals"))
from results import add_results_option, table, write_section  # noqa: E402


def _p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--database-url")
    add_results_option(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = args.database_url or f"sqlite:///{Path(folder) / 'bench.db'}"
        engine = open_database(Settings(database_url=url))
        tokens = TokenStore(engine)
        secret, row = tokens.create("bench", "bench", None, ["memory:read"])
        token_table = TokenRow.__table__
        push_back = sa.update(token_table).where(token_table.c.id == row.id)

        def stamp() -> datetime | None:
            found = tokens.find(row.id)
            return None if found is None else found.last_used_at

        tokens.verify(secret)
        before = stamp()
        fresh = []
        for _ in range(args.calls):
            start = time.perf_counter()
            tokens.verify(secret)
            fresh.append((time.perf_counter() - start) * 1e6)
        writes = 0 if stamp() == before else 1
        stale, stamped = [], 0
        for _ in range(args.calls):
            old = (datetime.now(UTC) - 2 * LAST_USED_RESOLUTION).replace(microsecond=0)
            with engine.begin() as connection:
                connection.execute(push_back.values(last_used_at=old.replace(tzinfo=None)))
            start = time.perf_counter()
            tokens.verify(secret)
            stale.append((time.perf_counter() - start) * 1e6)
            stamped += stamp() != old
        rows = [
            {"calls": "fresh (read only)", "median_us": round(statistics.median(fresh)), "p95_us": round(_p95(fresh)), "stamps_written": writes},
            {"calls": "stale (read + stamp)", "median_us": round(statistics.median(stale)), "p95_us": round(_p95(stale)), "stamps_written": stamped},
        ]
        print(f"backend {engine.dialect.name}, {args.calls} calls each")
        print(table(rows))
        if args.results:
            write_section(args.results, f"token-last-use-{engine.dialect.name}", f"Token verify and its last-use stamp, {engine.dialect.name}", table(rows))
        engine.dispose()


if __name__ == "__main__":
    main()
