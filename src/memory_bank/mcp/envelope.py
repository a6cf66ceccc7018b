"""One POST body, checked as one JSON-RPC message before the MCP SDK parses it.

The SDK answers a batch or a malformed envelope with ``-32602`` and pydantic's whole
error report, which echoes the input back (a kilobyte or two per request). JSON-RPC
has its own codes for these: ``-32700`` when the body is not JSON, ``-32600`` when it
is not a single request, notification or response. A message with an ``id`` that is
not a string or an integer (an object, an array, a float, null, a boolean) is not a
notification either, though the SDK's union takes it for one and answers nothing
(202): its sender expects an answer, so it gets ``-32600`` too. The answer is short, fixed text
with ``id: null`` (JSON-RPC 2.0 §5: the id of an invalid request is not trusted), so
nothing a client sent is reflected. Batches are refused: MCP 2025-06-18 dropped them.
The body is checked with the SDK's own message adapter, so exactly what passes here
is what the SDK accepts. Over stdio the SDK reads the lines itself and drops those it
cannot take, leaving their sender waiting; ``classify`` names the same error for them.
"""

from __future__ import annotations

import pydantic_core
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError
from starlette.responses import Response

NOT_JSON = "Parse error: the body is not JSON"
BATCH = "Invalid Request: batches are not supported; send one JSON-RPC message at a time"
NOT_A_MESSAGE = (
    'Invalid Request: expected one object with "jsonrpc": "2.0" and either a string "method" '
    '(request or notification) or "result"/"error" (response)'
)
BAD_ID = 'Invalid Request: "id" must be a string or an integer; a notification has no "id"'


class EnvelopeError(Exception):
    """The body is not one JSON-RPC message; ``response()`` is what the client gets."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def reply(self) -> JSONRPCError:
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=self.code, message=self.message))

    def response(self) -> Response:
        """The HTTP answer: 400 with the JSON-RPC error."""
        return Response(self.reply().model_dump_json(by_alias=True, exclude_unset=True), 400, media_type="application/json")


def check_envelope(body: bytes) -> JSONRPCMessage:
    """The one JSON-RPC 2.0 message ``body`` is, else ``EnvelopeError``."""
    try:
        raw = pydantic_core.from_json(body)
    except ValueError:
        raise EnvelopeError(PARSE_ERROR, NOT_JSON) from None
    if isinstance(raw, list):
        raise EnvelopeError(INVALID_REQUEST, BATCH)
    try:
        message: JSONRPCMessage = jsonrpc_message_adapter.validate_python(raw, by_name=False)
    except ValidationError:
        raise EnvelopeError(INVALID_REQUEST, NOT_A_MESSAGE) from None
    if isinstance(message, JSONRPCNotification) and isinstance(raw, dict) and "id" in raw:
        raise EnvelopeError(INVALID_REQUEST, BAD_ID)
    return message


def classify(failure: ValidationError) -> EnvelopeError:
    """The error for a line the SDK's stdio reader could not take as a message (it parses and validates in one step)."""
    errors = failure.errors()
    if any(e["type"] == "json_invalid" for e in errors):
        return EnvelopeError(PARSE_ERROR, NOT_JSON)
    if errors and isinstance(errors[0].get("input"), list):
        return EnvelopeError(INVALID_REQUEST, BATCH)
    return EnvelopeError(INVALID_REQUEST, NOT_A_MESSAGE)
