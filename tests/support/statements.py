"""The SQL statements a block of code runs: what the search-bound tests count."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.engine import Engine


@contextmanager
def statements(engine: Engine) -> Iterator[list[str]]:
    """The SQL statements run on ``engine`` inside the block."""
    seen: list[str] = []

    def record(_conn, _cursor, statement: str, *_args) -> None:  # type: ignore[no-untyped-def]
        seen.append(statement)

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
