"""The request deadline of ``memory-bank serve`` (``api.unparsed``) never blames a client for the
server's own delays: a real uvicorn server with the protocol ``serve`` uses, in front of an app
that is slow to read, and clients that send at full speed."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
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


#: ``/stream``: an answer far larger than any socket buffer, in pieces.
STREAM_PIECE, STREAM_PIECES = 65_536, 1_000
#: When each ``/stream`` answer ended (its sends return at once once the client is gone).
STREAM_ENDS: list[float] = []


async def slow_reader(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    """Reads the whole body and answers how many bytes it got: on ``/upload`` only after a
    wait; ``/block`` holds the whole event loop first, as a burst of load does. ``/stream``
    answers 64 MB, as a large export does."""
    if scope["type"] != "http":
        return
    if scope["path"] == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for _ in range(STREAM_PIECES):
            await send({"type": "http.response.body", "body": b"x" * STREAM_PIECE, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        STREAM_ENDS.append(time.monotonic())
        return
    if scope["path"] == "/upload":
        await asyncio.sleep(APP_DELAY_SECONDS)
    elif scope["path"] == "/block":
        time.sleep(APP_DELAY_SECONDS)
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


def send_in_pieces(address: tuple[str, int], head: bytes, pieces: list[tuple[float, bytes]]) -> bytes:
    """``head``, then each ``(delay, bytes)`` piece after its delay; what comes back until the close."""
    with socket.create_connection(address, timeout=30) as connection:
        connection.sendall(head)
        for delay, piece in pieces:
            time.sleep(delay)
            connection.sendall(piece)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    return received


async def test_body_bytes_that_came_with_the_head_count_toward_its_pace(server: tuple[str, int]) -> None:
    """20 KB with the head, then 300 bytes a second for longer than the pace's grace: over 500
    bytes a second on average, so not cut. Before, the first 20 KB were not counted."""
    head = b"POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 30000\r\nConnection: close\r\n\r\n"
    drip = [(0.5, b"x" * 150)] * 9
    answer = await asyncio.to_thread(send_in_pieces, server, head + b"x" * 20_000, [*drip, (0.1, b"x" * (10_000 - 1350))])
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"30000")


async def test_a_client_is_not_cut_while_the_server_holds_its_event_loop(server: tuple[str, int]) -> None:
    """Half a body, then the rest sent while another request holds the loop for longer than the
    timeout: the rest is in the socket when the deadline runs, late; the server was behind."""
    head = b"POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nConnection: close\r\n\r\n"

    def block() -> None:
        time.sleep(0.3)
        send_in_pieces(server, b"GET /block HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", [])

    blocker = threading.Thread(target=block)
    blocker.start()
    answer = await asyncio.to_thread(send_in_pieces, server, head + b"12345", [(0.8, b"67890")])
    blocker.join()
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"10")


def read_stream(address: tuple[str, int], *, pause: float, for_seconds: float) -> tuple[int, bool]:
    """``GET /stream``, reading 16 KB every ``pause`` seconds (none after the head when ``pause``
    is longer than ``for_seconds``) for ``for_seconds``: the bytes read, and whether the server
    cut the connection meanwhile."""
    with socket.create_connection(address) as connection:
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        connection.sendall(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        received = len(connection.recv(4096))
        until = time.monotonic() + for_seconds
        while (left := until - time.monotonic()) > 0:
            time.sleep(min(pause, left))
            if time.monotonic() >= until:
                break
            try:
                piece = connection.recv(16_384)
            except ConnectionResetError:
                return received, True
            if not piece:
                return received, True
            received += len(piece)
    return received, False


async def test_a_client_that_stops_reading_an_answer_is_cut_and_the_app_is_let_go(server: tuple[str, int]) -> None:
    """A stalled reader held its answer (a large export's snapshot and slot) for ever."""
    STREAM_ENDS.clear()
    started = time.monotonic()
    await asyncio.to_thread(read_stream, server, pause=60, for_seconds=TIMEOUT_SECONDS + 4)
    assert len(STREAM_ENDS) == 1 and TIMEOUT_SECONDS - 0.1 < STREAM_ENDS[0] - started < TIMEOUT_SECONDS + 3


async def test_a_client_that_reads_an_answer_slowly_is_not_cut(server: tuple[str, int]) -> None:
    STREAM_ENDS.clear()
    received, cut = await asyncio.to_thread(read_stream, server, pause=0.2, for_seconds=4 * TIMEOUT_SECONDS)
    assert not cut and received > 16_384 * 10
