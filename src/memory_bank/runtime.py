"""The small runtime that generated code is written against.

Like oapi-codegen's strict server, ``memory_bank.generated.routes`` never touches the
database or the token table: it validates input with the generated models, asks an
``Authorize`` dependency for the principal, calls the handwritten implementation of
``memory_bank.generated.interface``, and renders the ``Reply`` it gets back here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import pydantic_core
from fastapi import Request
from fastapi.responses import Response, StreamingResponse

from memory_bank.errors import ApiError, ErrorCode, FieldError
from memory_bank.security.principal import Principal

T = TypeVar("T")

#: ``authorize(permission)`` returns a FastAPI dependency that authenticates the
#: request, checks ``permission`` and the rate limit, and yields the principal.
Authorize = Callable[[str], Callable[..., Awaitable[Principal]]]

#: A body streamed as text, e.g. JSON lines; each item ends with its own newline.
TextStream = AsyncIterator[str]


@dataclass(frozen=True)
class Reply(Generic[T]):
    """A handler's answer: the body and, when the operation has several 2xx, which one.

    ``status_code=None`` means the operation's first declared success status.
    """

    body: T
    status_code: int | None = None


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
        return Response(pydantic_core.to_json(reply.body), status_code=status, media_type=media_type)
    return StreamingResponse(reply.body, status_code=status, media_type=media_type)  # type: ignore[arg-type]


async def read_text_body(request: Request) -> str:
    """A non-JSON request body (e.g. JSON lines) as text; undecodable bytes are the caller's error."""
    try:
        return (await request.body()).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(
            ErrorCode.invalid_params,
            "the request body is not UTF-8 text",
            [FieldError("/body", "encoding", f"byte {exc.start} is not valid UTF-8")],
        ) from None


__all__ = ["Authorize", "Principal", "Reply", "TextStream", "read_text_body", "render_reply"]
