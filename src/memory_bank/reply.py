"""What a handler answers: the vocabulary of ``generated.*_interface``, free of HTTP.

The handlers return a ``Reply``; the edge (``api.bodies.render_reply``) turns it into
the response the spec declares, and an in-process MCP call takes the object itself.
Keeping it here lets handlers depend on nothing above them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Generic, TypeVar

#: Covariant: a ``Reply[Memory]`` is a ``Reply[object]``, which is all ``render_reply`` reads.
T_co = TypeVar("T_co", covariant=True)

#: A body streamed as text, e.g. JSON lines; each item ends with its own newline.
TextStream = AsyncIterator[str]


@dataclass(frozen=True)
class Reply(Generic[T_co]):
    """A handler's answer: the body and, when the operation has several 2xx, which one.

    ``status_code=None`` means the operation's first declared success status.
    """

    body: T_co
    status_code: int | None = None
