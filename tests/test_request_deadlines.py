"""The request deadline of ``memory-bank serve`` (``api.unparsed``) never blames a client for the
server's own delays: a real uvicorn server with the protocol ``serve`` uses, in front of an app
that is slow to read, and clients that send at full speed."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import uvicorn

from memory_bank.api.middleware import REQUEST_HEAD_BYTES
from memory_bank.api.unparsed import problem_protocol

TIMEOUT_SECONDS = 1.0
#: How long the app waits before it reads a body: two and a half timeouts, so that the
#: "100 Continue" goes out between two of the deadline's former checks.
APP_DELAY_SECONDS = 2.5 * TIMEOUT_SECONDS

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


async def slow_reader(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    """Waits, then reads the whole body and answers how many bytes it got."""
    if scope["type"] != "http":
        return
    await asyncio.sleep(APP_DELAY_SECONDS)
    size, more = 0, True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        size, more = size + len(message.get("body", b"")), message.get("more_body", False)
    body = str(size).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, int]]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        slow_reader, http=problem_protocol(TIMEOUT_SECONDS), ws="none", lifespan="off", log_config=None,
        h11_max_incomplete_event_size=REQUEST_HEAD_BYTES,
    )  # fmt: skip
    served = uvicorn.Server(config)
    task = asyncio.create_task(served.serve(sockets=[listener]))
    while not served.started:
        await asyncio.sleep(0.01)
    yield listener.getsockname()
    served.should_exit = True
    await task


async def exchange(address: tuple[str, int], head: bytes, body: bytes, *, after_continue: float | None = None) -> bytes:
    """``head``, then ``body``: at once, or ``after_continue`` seconds after the server's "100 Continue"."""
    reader, writer = await asyncio.open_connection(*address)
    writer.write(head)
    if after_continue is not None:
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 100 ")
        await asyncio.sleep(after_continue)
    writer.write(body)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), timeout=APP_DELAY_SECONDS + 10)
    writer.close()
    return answer


@pytest.mark.parametrize("size", [10_000, 2_000_000], ids=["held by the app", "past uvicorn's 64 KB, reading paused"])
async def test_a_body_sent_at_once_to_an_app_slow_to_read_it_is_answered(server: tuple[str, int], size: int) -> None:
    """The body arrives within a moment, then waits in the server for longer than the timeout: the
    wait is the server's. Before, the client got a 408, or, with reading paused, a reset."""
    head = b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % size
    answer = await exchange(server, head, b"x" * size)
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(str(size).encode())


async def test_a_client_waiting_for_100_continue_gets_the_whole_timeout_after_it(server: tuple[str, int]) -> None:
    """The app asks for the body (and so sends "100 Continue") only when it reads, after longer
    than the timeout; the client's clock starts then. Before, it ran on from the deadline's last
    look at the wait, and a client sending most of a timeout after the 100 got a 408."""
    head = b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
    answer = await exchange(server, head, b"hello", after_continue=0.7 * TIMEOUT_SECONDS)
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"5")
