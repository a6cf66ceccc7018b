"""The small runtime that generated code is written against.

Like oapi-codegen's strict server, ``memory_bank.generated.routes`` never touches the
database or the token table: it validates input with the generated models, asks an
``Authorize`` dependency for the principal, calls the handwritten implementation of
``memory_bank.generated.interface``, and renders the ``Reply`` it gets back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from memory_bank.security.principal import Principal

T = TypeVar("T")

#: ``authorize(permission)`` returns a FastAPI dependency that authenticates the
#: request, checks ``permission`` and the rate limit, and yields the principal.
Authorize = Callable[[str], Callable[..., Awaitable[Principal]]]


@dataclass(frozen=True)
class Reply(Generic[T]):
    """A handler's answer: the body and, when the operation has several 2xx, which one.

    ``status_code=None`` means the operation's first declared success status.
    A body that is an async iterator of text is streamed (used for JSON lines).
    """

    body: T
    status_code: int | None = None


TextStream = AsyncIterator[str]

__all__ = ["Authorize", "Principal", "Reply", "TextStream"]
