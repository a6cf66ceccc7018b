"""Structured logging: JSON lines in staging and production, readable lines in development.

Log shippers want one JSON object per line; a developer at a terminal wants to read.
Every record logged while a request is served carries that request's ``request_id``
(the one ``RequestIdMiddleware`` chose, echoed as ``X-Request-ID`` and stored in the
audit event), so a log line, an audit event and a client's bug report join on it.

``AccessLog`` writes one line per request: method, route (``/v1/memory/{memory_id}``),
status, latency, request id and, once the bearer token was resolved, the org. Never
the concrete path, query string, headers or bodies: they carry keypaths, tokens and
memory content. Exceptions are logged by type, code and frames only
(``observability.redaction``), for the same reason.

``log_start`` writes the line every start begins with: what the process runs on, so an
operator sees at once a replica on the wrong database or without the shared limiter.

It sits with metrics, probes and the audit queue: what an operator reads about a
running service. The name repeats the standard library's; imports here are absolute,
so ``import logging`` in this package is always the standard one.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from sqlalchemy.engine import URL
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory_bank import __version__
from memory_bank.observability.metrics import REFUSED_STATE_KEY
from memory_bank.observability.redaction import RedactExceptions
from memory_bank.settings import Profile, Settings

ACCESS_LOGGER = "memory_bank.access"
START_LOGGER = "memory_bank.start"

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
        elif record.exc_text:  # already rendered (``RedactExceptions``)
            entry["exception"] = record.exc_text
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


#: Fields the readable message of an access or a start line already says.
_SPOKEN = frozenset(
    {"method", "path", "status", "latency_ms", "request_id", "profile", "version", "database", "limiter", "public_url", "transport"}
)


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
    handler.addFilter(RedactExceptions())
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
            if refused := state.get(REFUSED_STATE_KEY):
                status, complete = refused[0], True  # what the client got from the server
            self._write(scope, state, status, (time.perf_counter() - started) * 1000, complete)
            _request_id.reset(token)

    def _write(self, scope: Scope, state: dict[str, Any], status: int, latency_ms: float, complete: bool) -> None:
        principal = state.get("principal")
        # The route's template, not the path: a path can carry data (a keypath is the caller's words).
        fields = {
            "method": scope["method"],
            "path": getattr(scope.get("route"), "path", None) or scope["path"],
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


def log_unparsed(request_id: str, status: int, code: str, what: str = "unparsable request") -> None:
    """The access line of a request the HTTP server refused before the app saw it (``api.unparsed``):
    no method or path could be read, so it names ``what`` was refused and the id the client was given."""
    token = _request_id.set(request_id)
    try:
        fields = {"method": None, "path": None, "status": status, "code": code}
        logging.getLogger(ACCESS_LOGGER).info(f"({what}) -> {status} {code}", extra={"fields": fields})
    finally:
        _request_id.reset(token)


def describe_database(url: URL) -> str:
    """Where the data is: SQLite's absolute file, else the server and database (never the password)."""
    if url.get_backend_name() == "sqlite":
        if not url.database or url.database == ":memory:":
            return "SQLite in memory"
        return f"SQLite {Path(url.database).resolve()}"
    server = f"{url.host or 'localhost'}{f':{url.port}' if url.port else ''}"
    return f"{url.get_backend_name()} {server}/{url.database or ''}"


def describe_limiter(redis_url: str | None) -> str:
    """Which rate limiter counts requests: Redis (its host, never the password) or this process alone."""
    if not redis_url:
        return "in-process"
    parts = urlsplit(redis_url)
    if parts.scheme == "unix":
        return f"Redis {parts.path}"
    return f"Redis {parts.hostname or 'localhost'}:{parts.port or 6379}{parts.path}"


def log_start(settings: Settings, *, stdio: bool = False) -> None:
    """One line saying what this start runs on: profile, version, database, limiter, public URL
    and, when one is trusted, the authorization server whose tokens are accepted. Under ``stdio``
    (``memory-bank mcp``) it says so instead of the last two: nothing is served at a URL, and the
    one token it acts as is a token of the database."""
    fields = {
        "profile": settings.env.value,
        "version": __version__,
        "database": describe_database(settings.database),
        "limiter": describe_limiter(settings.redis_url),
    }
    message = f"memory-bank {fields['version']} ({fields['profile']}) on {fields['database']}, rate limits {fields['limiter']}"
    if stdio:
        fields["transport"] = "stdio"
        message += ", MCP over stdio"
    else:
        fields["public_url"] = settings.public_url
        message += f", public URL {settings.public_url}"
        if settings.oauth_issuer:
            fields["oauth_issuer"] = settings.oauth_issuer
            message += f", OAuth tokens from {settings.oauth_issuer}"
    logging.getLogger(START_LOGGER).info(message, extra={"fields": fields})
