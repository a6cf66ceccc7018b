"""Structured logging: JSON lines in staging and production, readable lines in development.

Log shippers want one JSON object per line; a developer at a terminal wants to read.
Every record logged while a request is served carries that request's ``request_id``
(the one ``RequestIdMiddleware`` chose, echoed as ``X-Request-ID`` and stored in the
audit event), so a log line, an audit event and a client's bug report join on it.

``AccessLog`` writes one line per request: method, path, status, latency, request id
and, once the bearer token was resolved, the org. Never the query string, headers or
bodies: they carry tokens and memory content.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, TextIO

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory_bank.settings import Profile

ACCESS_LOGGER = "memory_bank.access"

#: The request being served by this task (and the worker threads it starts).
_request_id: ContextVar[str | None] = ContextVar("request_id", default=None)


class _StderrHandler(logging.StreamHandler[TextIO]):
    """Writes to whatever ``sys.stderr`` is now, so redirecting it (as test runners do) is followed."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        """``StreamHandler.__init__`` assigns a stream; the property above decides instead."""


class _RequestContext(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _request_id.get()
        return True


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    """Structured values passed as ``extra={"fields": {...}}``."""
    fields = getattr(record, "fields", None)
    return fields if isinstance(fields, dict) else {}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, message, request_id, then the record's fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        entry.update(_fields(record))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


class ReadableFormatter(logging.Formatter):
    """``12:00:01 INFO memory_bank.access [3f2a...] GET /v1/memory -> 200 in 3.1 ms org_id=acme``."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s [%(request_id)s] %(message)s", "%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        if getattr(record, "request_id", None) is None:
            record.request_id = "-"
        line = super().format(record)
        extras = " ".join(f"{k}={v}" for k, v in _fields(record).items() if k not in _SPOKEN and v is not None)
        return f"{line} {extras}" if extras else line


#: Access-line fields the readable message already says.
_SPOKEN = frozenset({"method", "path", "status", "latency_ms", "request_id"})


def configure_logging(profile: Profile, level: int = logging.INFO) -> None:
    """Send every logger (uvicorn's included) through one handler in the profile's format.

    Safe to call again (each app factory call does): it replaces only its own handler.
    uvicorn's access logger is silenced (``AccessLog`` writes a better line), and so are
    HTTP clients' request lines, whose URLs would carry search text.
    """
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(handler)
    handler = _StderrHandler()
    handler.setFormatter(ReadableFormatter() if profile is Profile.development else JsonFormatter())
    handler.addFilter(_RequestContext())
    root.addHandler(handler)
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
    # uvicorn's access line duplicates ours; HTTP clients' request lines carry query strings;
    # Alembic narrates its set-up on every start, which says nothing to an operator.
    for name in ("uvicorn.access", "httpx", "httpx2", "httpcore", "alembic"):
        logging.getLogger(name).setLevel(logging.WARNING)


class AccessLog:
    """Pure ASGI middleware (streams pass through unbuffered): one access line per HTTP request.

    It must sit inside ``RequestIdMiddleware`` so the request id is already chosen.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._log = logging.getLogger(ACCESS_LOGGER)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state: dict[str, Any] = scope.setdefault("state", {})
        token = _request_id.set(state.get("request_id"))
        started = time.perf_counter()
        status = 500  # an exception before the response started becomes a 500
        complete = False  # a stream that dies mid-way (e.g. an export) already said 200

        async def send_and_note(message: Message) -> None:
            nonlocal status, complete
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                complete = True
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            self._write(scope, state, status, (time.perf_counter() - started) * 1000, complete)
            _request_id.reset(token)

    def _write(self, scope: Scope, state: dict[str, Any], status: int, latency_ms: float, complete: bool) -> None:
        principal = state.get("principal")
        fields = {
            "method": scope["method"],
            "path": scope["path"],
            "status": status,
            "latency_ms": round(latency_ms, 2),
            "org_id": getattr(principal, "org_id", None),
        }
        message = f"{fields['method']} {fields['path']} -> {status} in {fields['latency_ms']} ms"
        if complete:
            self._log.info(message, extra={"fields": fields})
        else:
            fields["aborted"] = True
            self._log.error(message + ", aborted before the response was complete", extra={"fields": fields})
