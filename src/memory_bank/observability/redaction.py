"""Keep exception text out of logs: only exception types, driver error codes and stack frames.

Exception messages are where data leaks into logs. A SQLAlchemy error's text holds the
statement and, unless the engine hides them, its parameters (memory content, token
hashes); a driver's own message can quote a value too (MySQL's "Duplicate entry
'...'"); and any other exception may have been built from the request. So every
record that passes ``RedactExceptions`` has its exception rendered as type, code and
frames, and an exception passed as a message argument as type and code. An operator
still sees where and what kind of failure it was, and joins it to the request by
``request_id``.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterator

from sqlalchemy.exc import DBAPIError

from memory_bank.store.contention import driver_code


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what caused it, the root cause first (the order Python prints them in)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not s for s in seen):
        seen.append(current)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return reversed(seen)


def describe(exc: BaseException) -> str:
    """``sqlalchemy.exc.OperationalError (2013)``: the type and, for a driver error, its numeric code."""
    kind = f"{type(exc).__module__}.{type(exc).__qualname__}"
    code = driver_code(exc) if isinstance(exc, DBAPIError) else None
    return kind if code is None else f"{kind} ({code})"


def safe_traceback(exc: BaseException) -> str:
    """Like a printed traceback, with each exception's message replaced by ``describe``."""
    parts = []
    for link in _chain(exc):
        frames = "".join(traceback.format_list(traceback.extract_tb(link.__traceback__)))
        parts.append(f"Traceback (most recent call last):\n{frames}{describe(link)}")
    return "\n\nwhich led to:\n\n".join(parts)


class RedactExceptions(logging.Filter):
    """A handler filter: rewrites each record's exceptions before any formatter sees them."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, BaseException):
            record.msg = describe(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(describe(a) if isinstance(a, BaseException) else a for a in record.args)
        if record.exc_info and record.exc_info[1] is not None:
            # Formatters print a cached ``exc_text`` and render ``exc_info`` only without one.
            record.exc_text = safe_traceback(record.exc_info[1])
            record.exc_info = None
        return True
