"""What the HTTP server cannot parse is refused with a problem document too.

uvicorn's h11 protocol answers a request head it cannot read with a plain-text 400
("Invalid HTTP request received.") before any app code runs: a URL or headers over h11's
limit (16 KB) once they arrive in more than one packet (the app refuses one that came
whole, ``api.middleware.RequestHeadLimit``), or bytes that are not HTTP. A client that
reads every refusal as problem+json then met one that is not. This protocol sends the
document the app would: 431 ``request_head_too_large`` when the head outgrew the limit,
else 400 ``malformed_request``, with a request id that its access line names too. h11 can
read no further on that connection, so it closes, but only after a short drain: closed
with the rest of a long head unread, the socket resets, and the reset can discard the
answer before the client reads it.

uvicorn also waits for ever on a client that stops sending: a connection opened and left
silent, a head sent a line every few seconds (each byte cancels its keep-alive timer), a
body that stalls. A few thousand of them hold every file descriptor and the server takes
no more connections. So a request's head must arrive whole within ``timeout_seconds``
(the ``request_timeout_seconds`` setting) of the connection's opening or the previous
answer, and its body may not pause for longer nor, after that grace, come slower than 500
bytes a second: past that the client gets 408 ``request_timeout`` and the connection closes
(one that sent nothing closes quietly, as at keep-alive's end). Time the server is behind
(a ``100 Continue`` not yet sent, a body the app has not read, a busy event loop) does not
count against the client. An answer the client stops reading is held to the same timeout:
one that read none of it for that long (a stalled export holds a database snapshot and one
of a few export slots) has its connection aborted. Measured and tried:
``docs/decisions/0053-request-deadlines.md``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from email.utils import formatdate
from http import HTTPStatus
from typing import Any, ClassVar

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

from memory_bank.api.middleware import (
    REQUEST_HEAD_BYTES,
    REQUEST_ID_KEY,
    head_too_large,
    new_request_id,
)
from memory_bank.api.problems import PROBLEM_JSON, problem_document, status_of
from memory_bank.errors import DomainError, MalformedRequest, RequestTimeout
from memory_bank.observability.logging import log_unparsed
from memory_bank.observability.metrics import REFUSED_STATE_KEY, Metrics

__all__ = ["ProblemH11Protocol", "problem_protocol"]


#: Seconds a refused connection's further bytes are read and dropped before it closes.
DRAIN_SECONDS = 1.0
#: The slowest a body may arrive on average once the timeout's grace is spent: Apache's
#: ``RequestReadTimeout`` MinRate. A client sending a byte a second is cut, an upload is not.
MIN_BODY_BYTES_PER_SECOND = 500
#: How often a deadline looks again while a client waits for "100 Continue".
CONTINUE_POLL_SECONDS = 0.25
#: A deadline that finds the client late looks once more this much later before it refuses,
#: and again if it ran later than ``LOOP_LATE_SECONDS`` (the loop was busy: the server was behind).
CONFIRM_SECONDS = 0.5
LOOP_LATE_SECONDS = 0.25
_logger = logging.getLogger(__name__)

#: Empty lines (CRLF, or a bare LF as h11 also reads) before a request line.
_BLANK_LINES = re.compile(rb"(?:\r?\n)+")


class _HintedConnection(h11.Connection):
    """h11's connection, keeping the status its last refusal of the peer's bytes hinted: 431 for
    a head over the buffer limit, else 400 (or 501). uvicorn drops the error; what h11 still
    holds does not tell, as a head h11 could read but refused is gone from its buffer.

    It also skips blank lines before a request line, which RFC 9112 (2.2) says a server
    should ignore and h11 refuses: a client that ends a body with an extra CRLF, as old
    browsers did, had its next request on the connection refused. At most a head's worth
    (:data:`REQUEST_HEAD_BYTES`) per request: past that h11 refuses them as before, so a
    client cannot keep the server matching blank lines for the whole head deadline.

    And it refuses a request framed twice, by Content-Length and Transfer-Encoding, which h11
    reads by the latter and keeps the connection open after: RFC 9112 (6.3) calls such a
    request a likely smuggling attempt, to be handled as an error, and a proxy in front that
    frames by Content-Length would see the bytes of a hidden second request as this one's body."""

    refused_status = 400
    #: Why the last request h11 could read was refused anyway, if it was.
    refused_because: str | None = None
    #: Blank-line bytes skipped since the last request line.
    _skipped = 0

    def next_event(self) -> Any:
        if self.their_state is h11.IDLE:
            pending, closed = self.trailing_data
            budget = max(0, REQUEST_HEAD_BYTES - self._skipped)
            blank = _BLANK_LINES.match(pending, 0, budget)
            if blank:
                self._receive_buffer.maybe_extract_at_most(blank.end())  # h11 offers no public way to skip bytes
                self._skipped += blank.end()
            if pending[blank.end() if blank else 0 :] == b"\r" and not closed and self._skipped < REQUEST_HEAD_BYTES:
                return h11.NEED_DATA  # its LF is on the way
        try:
            event = super().next_event()
        except h11.RemoteProtocolError as error:
            self.refused_status = error.error_status_hint
            raise
        if isinstance(event, h11.Request):
            self._skipped = 0
            names = {name for name, _ in event.headers}
            if b"content-length" in names and b"transfer-encoding" in names:
                self.refused_because = (
                    "The request gives both Content-Length and Transfer-Encoding; its body's length must be "
                    "stated one way only (RFC 9112, 6.3): send Content-Length for a body sent whole, "
                    "or Transfer-Encoding: chunked alone."
                )
                raise h11.RemoteProtocolError(self.refused_because, error_status_hint=400)
        return event

    def waits_for_nothing(self) -> bool:
        """Whether nothing of a next request has come (a CR of a blank line is nothing)."""
        return self.trailing_data[0] in (b"", b"\r")


def problem_protocol(timeout_seconds: float, metrics: Metrics | None = None) -> type[ProblemH11Protocol]:
    """The class to give ``uvicorn.Config(http=...)``: uvicorn makes one per connection and
    passes it only its own config, so the settings ride on the class."""
    return type("ProblemH11Protocol", (ProblemH11Protocol,), {"timeout_seconds": timeout_seconds, "metrics": metrics})


class ProblemH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, refusing what it cannot parse, or what does not arrive in time,
    as problem+json; made by :func:`problem_protocol`."""

    #: How long a head may take to arrive whole, and a body may pause (``request_timeout_seconds``).
    timeout_seconds: ClassVar[float]
    #: Where refusals are counted (the app's series).
    metrics: ClassVar[Metrics | None]
    _refused = False

    def __init__(self, config: Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self.conn = self._hinted = _HintedConnection(h11.SERVER, config.h11_max_incomplete_event_size or REQUEST_HEAD_BYTES)
        self._deadline: asyncio.TimerHandle | None = None
        #: While a body arrives: when its clock started (loop time) and the bytes come since.
        self._body_since: float | None = None
        self._body_bytes = 0
        #: Whether the deadline last found the client waiting for "100 Continue".
        self._awaiting_continue = False
        #: When the deadline is due, and whether it is the second look before a refusal.
        self._due, self._confirming = 0.0, False
        #: While writing is paused (the client does not read the answer): the check of its progress.
        self._write_check: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.loop.time() + self.timeout_seconds)

    def data_received(self, data: bytes) -> None:
        if not self._refused:  # after a refusal, what the client still sends is dropped
            super().data_received(data)
            self._watch(len(data))

    def on_response_complete(self) -> None:
        self._arm(self.loop.time() + self.timeout_seconds)  # the next head's; the call below may read it already
        super().on_response_complete()
        self._watch(0)

    def pause_writing(self) -> None:
        super().pause_writing()
        self._watch_reader(self.transport.get_write_buffer_size())

    def resume_writing(self) -> None:
        super().resume_writing()
        self._stop_watching_reader()

    def _watch_reader(self, unsent: int) -> None:
        self._stop_watching_reader()
        due = self.loop.time() + self.timeout_seconds
        self._write_check = self.loop.call_at(due, self._reader_overdue, unsent, due)

    def _stop_watching_reader(self) -> None:
        if self._write_check is not None:
            self._write_check.cancel()
            self._write_check = None

    def _reader_overdue(self, unsent: int, due: float) -> None:
        """A client that read none of the answer for the whole timeout is gone or holding the
        server (a stalled export keeps a database snapshot and one of a few export slots): the
        connection is aborted. One that read some, however slowly, is watched again, as is
        one whose check ran late (the loop was busy, so the server was behind)."""
        self._write_check = None
        if not self.flow.write_paused or self.transport.is_closing():
            return
        now_unsent = self.transport.get_write_buffer_size()
        if now_unsent < unsent or self.loop.time() - due > LOOP_LATE_SECONDS:
            self._watch_reader(now_unsent)
            return
        _logger.warning("the client read none of the answer for %g seconds: connection closed", self.timeout_seconds)
        self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._stop_watching_reader()
        super().connection_lost(exc)

    def _watch(self, received: int) -> None:
        """Keep the deadline that fits what the client is sending: the head's (set when the
        connection opened or an answer ended), the body's (moved at every piece), or none once
        the whole request is in."""
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            if self._body_since is None or self._awaiting_continue:  # the client could not send before
                self._restart_body_clock()
            else:
                self._body_bytes += received
            due = self._body_deadline()
            if not (self._confirming and due <= self.loop.time()):  # still behind its pace: the second look stands
                self._arm(due)
        else:
            self._body_since, self._awaiting_continue = None, False
            if state is not h11.IDLE:
                self._disarm()

    def _running(self) -> RequestResponseCycle | None:
        """The request the app is handling and has not answered whole, if any."""
        return self.cycle if self.cycle is not None and not self.cycle.response_complete else None

    def _restart_body_clock(self) -> None:
        """The client's body clock starts now, with the body bytes already in (those that came with the head)."""
        running = self._running()
        self._body_since, self._awaiting_continue = self.loop.time(), False
        self._body_bytes = len(running.body) if running is not None else 0

    def _body_deadline(self) -> float:
        """No pause over the timeout, and after the timeout's grace, on average at least
        :data:`MIN_BODY_BYTES_PER_SECOND`: a byte every few seconds holds a connection too."""
        assert self._body_since is not None
        paced = self._body_since + self.timeout_seconds + self._body_bytes / MIN_BODY_BYTES_PER_SECOND
        return min(self.loop.time() + self.timeout_seconds, paced)

    def _arm(self, when: float, *, confirming: bool = False) -> None:
        self._disarm()
        self._due, self._confirming = when, confirming
        self._deadline = self.loop.call_at(when, self._overdue)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _server_behind(self) -> bool:
        """Whether the wait is the server's: the app has not read what came (uvicorn stops
        reading past 64 KB the app has not taken)."""
        running = self._running()
        return self.flow.read_paused or (running is not None and bool(running.body))

    def _overdue(self) -> None:
        self._deadline = None
        if self._refused or self.transport.is_closing():
            return
        now, state = self.loop.time(), self.conn.their_state
        if state is h11.SEND_BODY and self.conn.they_are_waiting_for_100_continue:
            # The client waits for the app's "100 Continue", sent when the app first reads: look
            # again soon, so that once it is sent the client gets the whole timeout.
            self._awaiting_continue = True
            self._arm(now + min(self.timeout_seconds, CONTINUE_POLL_SECONDS))
        elif state is h11.SEND_BODY and (self._awaiting_continue or self._server_behind()):
            self._restart_body_clock()
            self._arm(now + self.timeout_seconds)
        elif state not in (h11.IDLE, h11.SEND_BODY):
            return
        elif not self._confirming or now - self._due > LOOP_LATE_SECONDS:
            # Before blaming the client, let the loop read what may wait in the socket: under load
            # a deadline can run late, or run before a read of bytes that came in time.
            self._arm(now + CONFIRM_SECONDS, confirming=True)
        elif state is h11.IDLE and self._hinted.waits_for_nothing():
            self.timeout_keep_alive_handler()  # nothing of a request came: close as keep-alive does
        else:
            late = (
                f"head (request line and headers) did not arrive whole within {self.timeout_seconds:g} seconds"
                if state is h11.IDLE
                else f"body paused for over {self.timeout_seconds:g} seconds or came slower than "
                f"{MIN_BODY_BYTES_PER_SECOND} bytes a second"
            )
            self._refuse(RequestTimeout(f"The request's {late}."))

    def send_400_response(self, msg: str) -> None:
        self._refuse(self._refusal(in_body=self._running() is not None))

    def _refuse(self, error: DomainError) -> None:
        """Answer ``error`` as the app would, then drain and close: h11 reads no further.

        Refused while the app reads the request, the answer takes the request's id, and the
        app's access line and count say what the client got (``REFUSED_STATE_KEY``): one line and one
        count per request, under its operation."""
        self._disarm()
        running = self._running()
        if running is not None:
            # A body that broke or stalled mid-request: the app, still running, must not answer
            # after this refusal (h11 refused its second response: an ERROR and a traceback per request).
            running.disconnected = True
            running.message_event.set()
        if self.conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):  # the app has answered already
            self.transport.close()
            return
        status = status_of(error)
        if running is not None:  # the app has the request (if its task has not run yet, it will)
            app_state = running.scope.setdefault("state", {})
            request_id = app_state.setdefault(REQUEST_ID_KEY, new_request_id())
            app_state[REFUSED_STATE_KEY] = (status, error.code.value)
        else:
            request_id = new_request_id()
            log_unparsed(request_id, status, error.code.value, "unfinished request" if isinstance(error, RequestTimeout) else "unparsable request")
            if self.metrics is not None:
                self.metrics.observe_refusal(status)
        body = json.dumps(problem_document(error, request_id=request_id), separators=(",", ":")).encode()
        headers = [
            (b"content-type", PROBLEM_JSON.encode()),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
            (b"date", formatdate(usegmt=True).encode()),
            (b"x-request-id", request_id.encode()),
        ]
        for event in (h11.Response(status_code=status, headers=headers, reason=HTTPStatus(status).phrase), h11.Data(data=body), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self._refused = True
        self.flow.resume_reading()  # the drain reads what is still coming, or the close resets the connection
        self.loop.call_later(DRAIN_SECONDS, self.transport.close)

    def _refusal(self, *, in_body: bool) -> DomainError:
        if in_body:  # the head was read: what broke is the body's chunked framing
            return MalformedRequest(
                "The request's chunked body could not be read: a chunk size line, extension or trailer "
                f"is malformed or over {REQUEST_HEAD_BYTES // 1024} KB."
            )
        if self._hinted.refused_status == 431:
            return head_too_large()
        if self._hinted.refused_because is not None:
            return MalformedRequest(self._hinted.refused_because)
        return MalformedRequest(
            "The request is not valid HTTP/1.1: its request line, a header line or its framing (Host, Content-Length, "
            "Transfer-Encoding) could not be read; send e.g. 'GET /v1/memory/search?q=... HTTP/1.1', 'Host: ...' and a blank line."
        )
