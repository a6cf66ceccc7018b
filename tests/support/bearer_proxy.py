"""A test-only reverse proxy that adds one bearer token and changes nothing else.

For clients that cannot send a token (the MCP conformance suite): the server keeps
requiring one, and the proxy forwards every request with ``Authorization: Bearer``
set and every other header as it came, ``Host`` and ``Origin`` included, so the
server's DNS-rebinding check sees exactly what the client sent. Bodies are buffered
both ways: ``/mcp`` answers plain JSON, never an open stream.
"""

from __future__ import annotations

import httpx
from starlette.types import Message, Receive, Scope, Send

#: Connection-level headers describe one hop, so each hop sets its own.
HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"transfer-encoding", b"content-length", b"te", b"upgrade"})


class BearerProxy:
    """ASGI app forwarding to ``upstream`` (a base URL) as the holder of ``token``."""

    def __init__(self, upstream: str, token: str) -> None:
        self._upstream = upstream.rstrip("/")
        self._authorization = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        body = await _read_body(receive)
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP | {b"authorization"}]
        headers.append((b"authorization", self._authorization))
        url = self._upstream + scope["raw_path"].decode("latin-1")
        if scope["query_string"]:
            url += "?" + scope["query_string"].decode("latin-1")
        async with httpx.AsyncClient(timeout=30) as client:
            answer = await client.request(scope["method"], url, headers=headers, content=body)
        out = [(k, v) for k, v in answer.headers.raw if k.lower() not in HOP_BY_HOP | {b"content-encoding"}]
        await send({"type": "http.response.start", "status": answer.status_code, "headers": out})
        await send({"type": "http.response.body", "body": answer.content})


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message: Message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
