"""Request bodies in and replies out: what the generated routes read and render with.

Like oapi-codegen's strict server, ``memory_bank.generated.*_routes`` never touches the
database or the token table: it validates input with the generated models, asks an
``Authorize`` dependency (``api.auth``) for the principal, calls the handwritten
implementation of a spec's ``memory_bank.generated.*_interface``, and renders the ``Reply`` it
gets back here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

import pydantic
import pydantic_core
from fastapi import Request
from fastapi.responses import Response, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect
from starlette.types import Receive, Scope, Send

from memory_bank import standard_json
from memory_bank.api.media import JSON, essence, is_json
from memory_bank.api.problems import HttpRefusal, validation_error
from memory_bank.api.argument_hints import known_at, where_it_belongs
from memory_bank.errors import DomainError, FieldError, InvalidInput, MalformedRequest, PayloadTooLarge, UnsupportedMediaType, field_errors
from memory_bank.reply import Reply
from memory_bank.security.principal import Principal

#: The generated model a JSON body is validated into.
BodyT = TypeVar("BodyT", bound=pydantic.BaseModel)

#: The ASGI scope key of an ``InProcessCall``. A key of the scope, not a header or a
#: cookie: an outside request's scope is built by the server from a fixed set of keys,
#: so only code in this process that builds a scope itself can set it.
IN_PROCESS = "memory_bank.in_process"


@dataclass
class InProcessCall:
    """What an in-process dispatch (an MCP tool call) leaves on its request's scope.

    ``principal`` is who the dispatcher already verified the token of for this call,
    so the route does not verify it again (None: it checks the bearer header).
    ``reply`` is filled in by the route with the handler's ``Reply``, so the caller
    takes the object itself instead of parsing the JSON it was rendered to.
    """

    principal: Principal | None
    reply: Reply[object] | None = None


def in_process_call(scope: Scope) -> InProcessCall | None:
    """The ``InProcessCall`` of a request the app dispatched to itself; None for every outside request."""
    call = scope.get(IN_PROCESS)
    return call if isinstance(call, InProcessCall) else None


class _JsonReply(Response):
    """A JSON reply: its ``Reply`` handed to an in-process caller, its bytes rendered only for the wire.

    An in-process caller takes the object and would throw the bytes away, so they are
    rendered when the request is an outside one (the body is empty otherwise).
    """

    def __init__(self, reply: Reply[object], status_code: int) -> None:
        super().__init__(status_code=status_code, media_type="application/json")
        self._reply = reply

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        call = in_process_call(scope)
        if call is not None:
            call.reply = self._reply
        else:
            self.body = pydantic_core.to_json(self._reply.body)
            self.headers["content-length"] = str(len(self.body))
        await super().__call__(scope, receive, send)


def render_reply(reply: Reply[object], *, statuses: tuple[int, ...], media_type: str | None) -> Response:
    """Turn a handler's ``Reply`` into the response the spec declares for it.

    A status the spec does not declare is a handler bug, not a client error, so it
    fails loudly instead of reaching a client that trusts the spec.
    """
    status = reply.status_code or statuses[0]
    if status not in statuses:
        raise RuntimeError(f"handler replied {status}; the spec declares {statuses}")
    if media_type is None:
        return Response(status_code=status)
    if media_type == "application/json":
        return _JsonReply(reply, status)
    return StreamingResponse(reply.body, status_code=status, media_type=media_type)  # type: ignore[arg-type]


async def read_text_body(request: Request, media_type: str, max_bytes: int | None = None) -> str:
    """A non-JSON request body (e.g. JSON lines) as text; undecodable bytes are the caller's error.

    ``media_type`` is the one the spec declares for it, and the only one read.

    With ``max_bytes`` (the body schema's ``x-max-bytes``) the bytes are counted as they
    arrive and the body is refused with 413 the moment it passes the bound, or before a
    byte is read when its Content-Length already does: an oversized upload, chunked or
    not, never sits whole in memory just to be rejected. Decoding runs in a worker thread,
    as it is linear in a body that may be tens of megabytes.
    """
    body = await read_capped(request, max_bytes, reads=media_type)
    return await run_in_threadpool(_decode, body)


def _decode(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput("the request body is not UTF-8 text", [not_utf8("/body", exc)]) from None


def not_utf8(field: str, exc: UnicodeDecodeError, advice: str = "") -> FieldError:
    """The failure (rule ``encoding``) of input at ``field`` whose bytes are not UTF-8: a body, a query parameter."""
    return FieldError(field, "encoding", f"byte {exc.start} is not valid UTF-8{advice}")


async def read_json_body(request: Request, shape: type[BodyT], *, max_bytes: int) -> BodyT:
    """The JSON body as ``shape``, read only now (after authentication) and never past ``max_bytes``.

    Routes call this instead of declaring the body to FastAPI, which would read and
    parse it before any dependency ran: unauthenticated clients could make the server
    hold bodies of any size. ``max_bytes`` is what the body's schema admits, computed
    by the generator. Validation is strict, as the schema an MCP client checks against
    is: ``"0.5"`` or ``true`` is not a number, so both doors accept the same bodies.
    """
    raw = await read_capped(request, max_bytes, reads=JSON)
    if not raw.strip():
        raise validation_error([FieldError("/body", "required", "send a JSON body")])
    try:
        body = shape.model_validate_json(raw, strict=True)
    except pydantic.ValidationError as exc:
        errors: list[Any] = [_hinted({**e, "loc": ("body", *e["loc"])}, shape) for e in exc.errors(include_url=False)]
        if all(e["type"] != "json_invalid" for e in errors):
            _check_standard(raw)  # a NaN that failed a bound is still a body that is not JSON
        raise validation_error(field_errors(errors)) from None
    _check_standard(raw)
    return body


@cache
def _as_input_schema(shape: type[pydantic.BaseModel]) -> dict[str, Any]:
    """``shape``'s JSON Schema where an operation's input schema (``capabilities``) holds its body, at ``/body``."""
    body = shape.model_json_schema(ref_template="#/properties/body/$defs/{model}")
    return {"type": "object", "properties": {"body": body}}


def _hinted(error: dict[str, Any], shape: type[pydantic.BaseModel]) -> dict[str, Any]:
    """pydantic's error for a body field ``shape`` does not have, told the field it most likely means, as
    ``execute_capability`` tells it (``argument_hints.where_it_belongs``): ``{"contnet": ...}`` -> ``/body/content``."""
    if error["type"] != "extra_forbidden":
        return error
    *at, name = error["loc"]
    schema = _as_input_schema(shape)
    hint = where_it_belongs(schema, str(name), error.get("input"), at, known_at(schema, at))
    return {**error, "msg": f"{error['msg']}{hint}"}


def _check_standard(raw: bytes) -> None:
    """Refuse what the model's parser took but JSON has not: ``NaN``, ``Infinity``, a key given
    twice, an integer of 4300+ digits no other reader would take. Checked once the model has
    parsed the body, so it costs a second parse of bodies that are JSON only."""
    try:
        standard_json.loads(raw, unique_keys=True)
    except standard_json.RepeatedKeys as exc:
        raise validation_error([FieldError("/body", "uniqueKeys", str(exc))]) from None
    except ValueError as exc:
        raise validation_error([FieldError("/body", "json", str(exc))]) from None


async def read_capped(
    request: Request,
    max_bytes: int | None,
    too_large: Callable[[], DomainError] | None = None,
    *,
    reads: str | None = None,
) -> bytes:
    """The whole body, refused with 413 unread when Content-Length says it is over ``max_bytes``.

    A body without a length (chunked) is counted while it streams and cut off at the cap.
    A body in a content coding (``check_identity_coding``) is refused before a byte is read,
    and so is one whose Content-Type is not ``reads`` (``check_media_type``), when given.
    Not FastAPI's ``max_body_size``: its limiter swaps whatever the app answers (a 401
    too) for a plain-text 413 when the declared length is over, breaking problem+json.
    """
    check_identity_coding(request)
    if reads is not None:
        check_media_type(request, reads)
    declared = request.headers.get("content-length", "")
    refuse = too_large or (lambda: _too_many_bytes(max_bytes))
    if max_bytes is not None and declared.isdigit() and int(declared) > max_bytes:
        raise refuse()
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if max_bytes is not None and size > max_bytes:
                raise refuse()
            chunks.append(chunk)
    except ClientDisconnect:
        # The client left, or sent a body the server could not read (``api.unparsed``): a
        # request that never arrived whole, not a server fault (this was a logged 500).
        raise MalformedRequest("the connection closed before the whole body arrived") from None
    return b"".join(chunks)


def _too_many_bytes(max_bytes: int | None) -> PayloadTooLarge:
    return PayloadTooLarge(f"the request body is at most {max_bytes} bytes")


#: A content coding named back to the client only when it looks like one (a token, short).
_CODING_NAME = re.compile(r"^[a-z0-9._+-]{1,32}$")


def check_identity_coding(request: Request) -> None:
    """Refuse, 415 ``unsupported_media_type``, a body sent in a content coding other than identity.

    Bodies are read as sent: a gzip body used to reach the JSON parser compressed and come
    back as a confusing parse error. Refused rather than decoded: no client of this API
    compresses what it sends, and a decoder would be a second size bound to get right
    (a small zip bomb inflates a thousandfold) for no caller. ``Accept-Encoding: identity``
    on the answer says what is read (RFC 7694).
    """
    codings = [c.strip().lower() for value in request.headers.getlist("content-encoding") for c in value.split(",")]
    foreign = [c for c in codings if c and c != "identity"]
    if not foreign:
        return
    named = ", ".join(c if _CODING_NAME.match(c) else "(unreadable)" for c in foreign[:3])
    error = UnsupportedMediaType(f"the body is read as sent: Content-Encoding {named} is not decoded; send it uncompressed")
    raise HttpRefusal(error, headers={"Accept-Encoding": "identity"})


def check_media_type(request: Request, declared: str) -> None:
    """Refuse, 415 ``unsupported_media_type``, a body whose Content-Type is not the ``declared`` one.

    A JSON body may also come as an ``application/*+json`` type; parameters and case do not
    matter. Before, every body was parsed as JSON whatever it was sent as, so ``curl -d``'s
    form encoding or ``text/plain`` (which a browser may send cross-origin without asking
    first) reached the parser. A body that names no type is read as the declared one (RFC
    9110 §8.3 lets the recipient look), as is every route's body: one type each. ``Accept``
    on the answer names that type (§15.5.16). The type sent is not echoed.
    """
    sent = request.headers.getlist("content-type")
    if not sent:
        return
    if len(sent) == 1 and (is_json(sent[0]) if declared == JSON else essence(sent[0]) == declared):
        return
    error = UnsupportedMediaType(f"this operation reads {declared}; send the body with Content-Type: {declared}")
    raise HttpRefusal(error, headers={"Accept": declared})
