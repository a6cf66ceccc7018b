"""One POST body, checked as one JSON-RPC message before the MCP SDK parses it.

The SDK answers a batch or a malformed envelope with ``-32602`` and pydantic's whole
error report, which echoes the input back (a kilobyte or two per request). JSON-RPC
has its own codes for these: ``-32700`` when the body cannot be read as JSON, ``-32600`` when it
is not a single request, notification or response. A message with an ``id`` that is
not a string or an integer (an object, an array, a float, null, a boolean) is not a
notification either, though the SDK's union takes it for one and answers nothing
(202): its sender expects an answer, so it gets ``-32600`` too. The answer is short, fixed text
with ``id: null`` (JSON-RPC 2.0 §5: the id of an invalid request is not trusted), so
nothing a client sent is reflected; a parse error adds the parser's reason, which names
a kind of fault and a position, never the input. Some bodies are JSON by the grammar
and still not read: a lone surrogate escape (``"\\ud800"``), nesting past the parser's
depth limit, a number of thousands of digits; their reason says so rather than that
the body is not JSON. Some are not JSON and still read: ``NaN``, ``Infinity`` and
``-Infinity``, which the parser takes (``standard_json``); they are a parse error here.
An object naming a key twice is ``-32600``, as REST refuses such a body.
Batches are refused: MCP 2025-06-18 dropped them. A message whose ``MCP-Protocol-Version``
header names a revision the SDK does not speak gets the protocol's ``-32022`` with the
revisions it does; the SDK took any such header for the stateless revision's and answered that
``params._meta`` lacked that revision's keys, which tells a client nothing about its header.
The body is checked with the SDK's own message adapter, so exactly what passes here
is what the SDK accepts. Over stdio the SDK reads the lines itself and drops those it
cannot take, leaving their sender waiting; ``classify`` names the same error for them, and
the lines it took are checked here as HTTP's bodies are (``stdio.refusal``).
"""

from __future__ import annotations

import pydantic_core
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    jsonrpc_message_adapter,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.responses import Response

from memory_bank import standard_json
from memory_bank.standard_json import NOT_FINITE, non_finite, plain_fault

NOT_JSON = "Parse error: the body could not be read as JSON"
BATCH = "Invalid Request: batches are not supported; send one JSON-RPC message at a time"
NOT_A_MESSAGE = (
    'Invalid Request: expected one object with "jsonrpc": "2.0" and either a string "method" '
    '(request or notification) or "result"/"error" (response)'
)
BAD_ID = 'Invalid Request: "id" must be a string or an integer; a notification has no "id"'
REPEATED_KEY = "Invalid Request: an object names one key twice; give each key once"
#: Every revision the SDK serves: by the initialize handshake, or by the per-request envelope.
PROTOCOL_VERSIONS = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
UNSUPPORTED_VERSION = (
    "Unsupported protocol version: the MCP-Protocol-Version header names no revision this server speaks; "
    f"send one of {', '.join(PROTOCOL_VERSIONS)} (the one initialize agreed on)"
)

#: The most of the parser's own words a ``-32700`` quotes (cut before they are put plainly,
#: so the position a plain reason ends with is never cut off).
_MAX_REASON = 120


class EnvelopeError(Exception):
    """The body is not one JSON-RPC message; ``response()`` is what the client gets."""

    def __init__(self, code: int, message: str, *, request_id: str | int | None = None, data: object = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id
        self.data = data

    def reply(self) -> JSONRPCError:
        error = ErrorData(code=self.code, message=self.message, **({} if self.data is None else {"data": self.data}))
        return JSONRPCError(jsonrpc="2.0", id=self.request_id, error=error)

    def response(self) -> Response:
        """The HTTP answer: 400 with the JSON-RPC error."""
        return Response(self.reply().model_dump_json(by_alias=True, exclude_unset=True), 400, media_type="application/json")


def parse_error(reason: str) -> EnvelopeError:
    """``-32700`` saying why: the parser's ``reason``, put plainly where the body was JSON all the same."""
    return EnvelopeError(PARSE_ERROR, f"{NOT_JSON}: {plain_fault(reason.strip()[:_MAX_REASON] or 'unreadable')}")


def not_finite() -> EnvelopeError:
    """``-32700`` for a ``NaN``, ``Infinity`` or ``-Infinity`` (or ``1e400``) that the SDK's parser took."""
    return EnvelopeError(PARSE_ERROR, f"{NOT_JSON}: {NOT_FINITE}")


def check_envelope(body: bytes) -> JSONRPCMessage:
    """The one JSON-RPC 2.0 message ``body`` is, else ``EnvelopeError``."""
    try:
        raw = pydantic_core.from_json(body)
    except ValueError as failure:
        raise parse_error(str(failure)) from None
    if non_finite(raw):
        raise not_finite()
    _check_standard(body)
    if isinstance(raw, list):
        raise EnvelopeError(INVALID_REQUEST, BATCH)
    try:
        message: JSONRPCMessage = jsonrpc_message_adapter.validate_python(raw, by_name=False)
    except ValidationError:
        raise EnvelopeError(INVALID_REQUEST, NOT_A_MESSAGE) from None
    if isinstance(message, JSONRPCNotification) and isinstance(raw, dict) and "id" in raw:
        raise EnvelopeError(INVALID_REQUEST, BAD_ID)
    return message


def check_protocol_version(requested: str | None, message: JSONRPCMessage) -> None:
    """``EnvelopeError`` (``-32022``, answering the request's id) when the ``MCP-Protocol-Version``
    header ``requested`` is given and names no revision of :data:`PROTOCOL_VERSIONS`. Its value
    is not repeated back, as nothing a client sent is."""
    if requested is None or requested in PROTOCOL_VERSIONS:
        return
    request_id = message.id if isinstance(message, JSONRPCRequest) else None
    raise EnvelopeError(UNSUPPORTED_PROTOCOL_VERSION, UNSUPPORTED_VERSION, request_id=request_id, data={"supported": list(PROTOCOL_VERSIONS)})


def _check_standard(body: bytes) -> None:
    """Refuse what the SDK's parsed value no longer shows: a key given twice, of which it kept the
    later member (and a NaN under the earlier one). REST and the import refuse such a body, so
    every body is read a second time, with Python's parser; what only that parser refuses (an
    integer of 4300+ digits) is left to the SDK's reading."""
    try:
        standard_json.loads(body, unique_keys=True)
    except standard_json.NotStandardJson:
        raise not_finite() from None
    except standard_json.RepeatedKeys:
        raise EnvelopeError(INVALID_REQUEST, REPEATED_KEY) from None
    except ValueError:
        pass


def classify(failure: ValidationError) -> EnvelopeError:
    """The error for a line the SDK's stdio reader could not take as a message (it parses and validates in one step).

    A ``NaN`` is looked for in what the parser made of the line, which the union's
    failures quote: whole, unless the line has ``method``, ``result`` and ``error`` all
    (each failure then quotes one member), where a NaN elsewhere is not seen and the
    line is an invalid request, as it is anyway.
    """
    errors = failure.errors()
    invalid = next((e for e in errors if e["type"] == "json_invalid"), None)
    if invalid is not None:
        return parse_error(str((invalid.get("ctx") or {}).get("error", "")))
    if any(non_finite(e.get("input")) for e in errors):
        return not_finite()
    if errors and isinstance(errors[0].get("input"), list):
        return EnvelopeError(INVALID_REQUEST, BATCH)
    return EnvelopeError(INVALID_REQUEST, NOT_A_MESSAGE)
