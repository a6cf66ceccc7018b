"""``memory-bank serve`` as a user runs it: a real uvicorn process on a free port, from a folder
of its own, with its own user data directory. What it prints, where clients are sent, where
the data goes."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import httpx
import pytest

from memory_bank.api.middleware import REQUEST_HEAD_BYTES
from memory_bank.cli.serve import _bootstrap_dev_token, listen
from memory_bank.store.tokens import TokenStore
from support import backends
from support.raw_http import read_response

MEMORY_BANK = str(Path(sys.executable).with_name("memory-bank"))
START_TIMEOUT_SECONDS = 90
RESOURCE_DOCUMENT = "/.well-known/oauth-protected-resource"


@dataclass
class Served:
    url: str
    process: subprocess.Popen[bytes]
    log: Path
    data_home: Path
    folder: Path

    def stderr(self) -> str:
        return self.log.read_text()


def start(tmp_path: Path, **env: str) -> Served:
    """``memory-bank serve --port P`` from an empty folder; waits until /health answers."""
    port = backends.free_port()
    folder, data_home = tmp_path / "cwd", tmp_path / "data"
    folder.mkdir()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_BANK_")}
    log = tmp_path / "serve.log"
    process = subprocess.Popen(
        [MEMORY_BANK, "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=folder,
        env=clean | {"XDG_DATA_HOME": str(data_home), "COLUMNS": "200"} | env,
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )
    served = Served(f"http://127.0.0.1:{port}", process, log, data_home, folder)
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while True:
        try:
            if httpx.get(served.url + "/health", timeout=2).status_code == 200:
                return served
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"serve did not start: {served.stderr()}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for the tests that only look at it (a start takes seconds)."""
    served = start(tmp_path_factory.mktemp("serve"))
    yield served
    served.process.terminate()
    served.process.wait(timeout=30)


def development_token(stderr: str) -> str:
    (token,) = [line.strip() for line in stderr.splitlines() if line.strip().startswith("mb_")]
    return token


def test_the_start_line_says_profile_version_database_limiter_and_public_url(served: Served) -> None:
    database = served.data_home / "memory-bank" / "memory-bank.db"
    (start_line,) = [line for line in served.stderr().splitlines() if "memory_bank.start" in line]
    assert f"memory-bank {version('memory-bank')} (development) on SQLite {database}," in start_line
    assert "rate limits in-process" in start_line and f"public URL {served.url}" in start_line


def test_the_capability_search_is_built_before_serving_and_says_what_it_cost(served: Served) -> None:
    (line,) = [line for line in served.stderr().splitlines() if "capability search ready" in line]
    assert "2 indexes" in line and " s" in line, line


def test_a_new_user_gets_a_working_token_and_the_data_lands_in_the_user_data_directory(served: Served) -> None:
    token = development_token(served.stderr())
    saved = httpx.post(served.url + "/v1/memory", json={"content": "first memory"}, headers={"Authorization": f"Bearer {token}"})
    assert saved.status_code == 201
    assert (served.data_home / "memory-bank" / "memory-bank.db").is_file()
    assert list(served.folder.iterdir()) == []  # nothing written where it was started


def test_the_401_challenge_and_the_resource_document_point_at_the_port_serve_binds(served: Served) -> None:
    challenge = httpx.post(served.url + "/mcp", json={})
    assert challenge.status_code == 401
    assert challenge.headers["www-authenticate"] == f'Bearer resource_metadata="{served.url}{RESOURCE_DOCUMENT}"'
    assert httpx.get(served.url + RESOURCE_DOCUMENT).json()["resource"] == served.url + "/mcp"


def test_an_explicit_public_url_wins_over_the_bound_address(tmp_path: Path) -> None:
    served = start(tmp_path, MEMORY_BANK_PUBLIC_URL="https://memory.example.com")
    try:
        assert httpx.get(served.url + RESOURCE_DOCUMENT).json()["resource"] == "https://memory.example.com/mcp"
        assert "public URL https://memory.example.com" in served.stderr()
    finally:
        served.process.terminate()
        served.process.wait(timeout=30)


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
async def test_the_listener_serve_hands_uvicorn_gets_nagle_turned_off_on_each_connection(host: str) -> None:
    """asyncio sets TCP_NODELAY on an accepted connection only when the listener's proto is TCP; without it a
    response's body segment waits for the client's delayed ACK of the header segment (about 40 ms a call)."""
    listener = listen(host, 0)
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sock = transport.get_extra_info("socket")
            accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
    try:
        _, writer = await asyncio.open_connection(host, listener.getsockname()[1])
        assert await asyncio.wait_for(accepted, 10) != 0
        writer.close()
    finally:
        server.close()
        await server.wait_closed()


def test_a_start_on_a_database_with_tokens_says_how_to_mint_one(engine, capsys: pytest.CaptureFixture[str]) -> None:
    """A token is shown once; a second start printed nothing, and a new user had no way on."""
    tokens = TokenStore(engine)
    _bootstrap_dev_token(tokens, "http://127.0.0.1:8000")
    first = capsys.readouterr().err
    _bootstrap_dev_token(tokens, "http://127.0.0.1:8000")
    again = " ".join(capsys.readouterr().err.split())
    assert "Development token" in first and tokens.count() == 1
    assert "no development token is printed" in again and "memory-bank token create --org dev --user dev" in again


def test_a_first_start_after_token_create_does_not_claim_a_token_was_printed(engine, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's "Or make one" (``token create`` before any ``serve``): no start ever printed a
    development token, so the start must not say one was."""
    tokens = TokenStore(engine)
    tokens.create("acme", "ada", None, ["memory:read"])
    _bootstrap_dev_token(tokens, "http://127.0.0.1:8000")
    said = " ".join(capsys.readouterr().err.split())
    assert "printed at the first start" not in said and "no development token is printed" in said
    assert tokens.count() == 1


def raw_exchange(url: str, request: bytes, packet: int = 1024) -> tuple[int, dict[str, str], bytes]:
    """``request`` sent over a socket in ``packet``-byte pieces (as a network delivers a long
    head); the status, headers and body of what comes back before the server closes."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        for start in range(0, len(request), packet):
            connection.sendall(request[start : start + packet])
            time.sleep(0.001)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


@pytest.mark.parametrize(
    "request_head",
    [
        b"GET /v1/memory/search?q=" + b"a" * 40_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",  # a URL over the limit
        b"GET /v1/memory HTTP/1.1\r\nHost: x\r\nX-Notes: " + b"n" * 40_000 + b"\r\n\r\n",  # one long header
        b"GET /v1/memory HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(3000)) + b"\r\n",
    ],
    ids=["url", "header", "many headers"],
)
@pytest.mark.parametrize("packet", [1024, 1 << 20], ids=["in pieces", "in one write"])
def test_a_request_head_over_the_limit_is_a_431_problem_not_plain_text(served: Served, request_head: bytes, packet: int) -> None:
    """h11 refuses a head it is still buffering; one that arrives whole reaches the app, which
    refuses it alike (``RequestHeadLimit``): the same answer however the network cuts it."""
    status, headers, body = raw_exchange(served.url, request_head, packet)
    assert (status, headers["content-type"]) == (431, "application/problem+json")
    document = httpx.Response(status, content=body).json()
    assert document["code"] == "request_head_too_large" and "16 KB" in document["detail"]


@pytest.mark.parametrize(
    "request_head",
    [b"GARBAGE\r\n\r\n", b"GET /v1/memory HTTP/1.1\r\nno colon here\r\n\r\n", b"G\xc3\xa9T / HTTP/1.1\r\n\r\n"],
)
def test_bytes_that_are_not_http_get_a_400_problem(served: Served, request_head: bytes) -> None:
    """With a date, and a request id that the server's access line names, as every answer has."""
    status, headers, body = raw_exchange(served.url, request_head)
    assert (status, headers["content-type"]) == (400, "application/problem+json")
    document = httpx.Response(status, content=body).json()
    assert document["code"] == "malformed_request" and document["request_id"] == headers["x-request-id"]
    assert headers["date"].endswith(" GMT")
    assert f"[{document['request_id']}] (unparsable request) -> 400 malformed_request" in served.stderr()


@pytest.mark.parametrize("order", ["length first", "chunked first"])
def test_a_request_framed_by_both_length_and_chunks_is_refused_and_nothing_behind_it_is_served(served: Served, order: str) -> None:
    """A hostile pass: h11 read such a request by its chunks, answered it and then served the
    request hidden in what a Content-Length proxy takes for its body. RFC 9112 (6.3)."""
    framing = [b"Content-Length: 40\r\n", b"Transfer-Encoding: chunked\r\n"]
    if order == "chunked first":
        framing.reverse()
    hidden = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    smuggled = b"POST /v1/memory HTTP/1.1\r\nHost: x\r\n" + b"".join(framing) + b"\r\n0\r\n\r\n" + hidden
    status, headers, body = raw_exchange(served.url, smuggled)
    assert (status, headers["content-type"], headers["connection"]) == (400, "application/problem+json", "close")
    assert b"HTTP/1.1" not in body  # the hidden request got no answer
    document = httpx.Response(status, content=body).json()
    assert document["code"] == "malformed_request" and "Content-Length and Transfer-Encoding" in document["detail"]


def test_a_websocket_upgrade_is_an_ordinary_request_answered_as_a_problem(served: Served) -> None:
    """No route is a websocket: uvicorn's handshake refused such requests in plain text."""
    upgrade = b"GET /v1/memory HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, close\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\r\n"
    status, headers, body = raw_exchange(served.url, upgrade)
    assert (status, headers["content-type"]) == (401, "application/problem+json")


@pytest.mark.parametrize("blank", [b"\r\n", b"\n", b"\r\n\r\n\n"], ids=["CRLF", "LF", "several"])
@pytest.mark.parametrize("packet", [1, 1024], ids=["a byte at a time", "in one write"])
def test_blank_lines_before_a_request_are_skipped_as_rfc_9112_asks(served: Served, blank: bytes, packet: int) -> None:
    """Before the first request and between pipelined ones (a body followed by a stray CRLF);
    a byte at a time, a CRLF's CR arrives alone and must wait for its LF."""
    ask = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    status, _, body = raw_exchange(served.url, blank + ask + blank + ask + blank + ask.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"), packet)
    assert status == 200 and body.count(b"HTTP/1.1 200 OK") == 2 and b"HTTP/1.1 4" not in body


@pytest.mark.parametrize(("blank_bytes", "status"), [(REQUEST_HEAD_BYTES // 2, 200), (REQUEST_HEAD_BYTES + 2, 400)])
def test_blank_lines_are_skipped_up_to_a_head_s_worth_then_refused(served: Served, blank_bytes: int, status: int) -> None:
    """Uncapped, a client could keep the server matching blank lines for the whole head deadline
    (a hostile pass: 20 such clients took /health from 11 to 259 ms)."""
    ask = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    answered, _, body = raw_exchange(served.url, b"\r\n" * (blank_bytes // 2) + ask, packet=4096)
    assert answered == status
    if status == 400:
        assert httpx.Response(status, content=body).json()["code"] == "malformed_request"


def test_a_carriage_return_that_no_line_feed_follows_is_still_malformed(served: Served) -> None:
    status, _, body = raw_exchange(served.url, b"\rGET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 400 and httpx.Response(status, content=body).json()["code"] == "malformed_request"


def test_a_long_url_under_the_limit_still_reaches_the_app(served: Served) -> None:
    status, headers, body = raw_exchange(served.url, b"GET /v1/memory/search?q=" + b"a" * 12_000 + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert status == 401 and httpx.Response(status, content=body).json()["code"] == "unauthorized"


def test_a_body_that_breaks_mid_request_is_a_400_problem_and_no_server_error(served: Served) -> None:
    """A chunk h11 cannot read while the app reads the body: the client gets the 400 problem,
    the app's own answer is dropped (h11 refused a second response, with an ERROR and a
    traceback), and the body's read ends as ``malformed_request``, not a logged 500."""
    token = development_token(served.stderr()).encode()
    chunked = b"POST /v1/memory HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + b"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    status, headers, body = raw_exchange(served.url, chunked + b"ZZ\r\n{}\r\n0\r\n\r\n")
    assert (status, headers["content-type"]) == (400, "application/problem+json")
    document = httpx.Response(status, content=body).json()
    assert document["code"] == "malformed_request" and "chunked body" in document["detail"]
    host, port = served.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(chunked.replace(b"Authorization: Bearer " + token + b"\r\n", b""))  # answered 401 at once
        time.sleep(0.3)
        connection.sendall(b"ZZ\r\nxx\r\n0\r\n\r\n")  # then a broken chunk, after the answer
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    assert received.startswith(b"HTTP/1.1 401 ") and b'"code":"unauthorized"' in received
    time.sleep(0.5)
    log = served.stderr()
    assert "Traceback" not in log and "ERROR" not in log and "Fatal error" not in log, log[-3000:]


def head_of(size: int) -> bytes:
    """A GET whose request line and headers are exactly ``size`` bytes on the wire."""
    bare = b"GET /v1/memory/search?q= HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    return bare.replace(b"?q= ", b"?q=" + b"a" * (size - len(bare)) + b" ")


@pytest.mark.parametrize(("size", "status"), [(16 * 1024, 401), (16 * 1024 + 1, 431)])
def test_the_limit_is_16_kb_to_the_byte_when_the_head_arrives_whole(served: Served, size: int, status: int) -> None:
    assert len(head_of(size)) == size
    assert raw_exchange(served.url, head_of(size), packet=1 << 20)[0] == status


def test_a_short_bad_head_with_a_long_body_behind_it_is_400_not_431(served: Served) -> None:
    """What h11 holds when it gives up includes body bytes of the same packet: only the head counts."""
    request = b"POST /v1/memory HTTP/1.1\r\nHost: x\r\nno colon here\r\nContent-Length: 20000\r\n\r\n" + b"x" * 20_000
    status, headers, body = raw_exchange(served.url, request, packet=1 << 20)
    assert status == 400 and httpx.Response(status, content=body).json()["code"] == "malformed_request"


def test_an_idle_connection_outlives_common_clients_pool_expiry(served: Served) -> None:
    """uvicorn closed an idle connection after 5 s, httpx's own pool expiry: a request sent on it
    as the server closed it met a reset (15 of about 15,000 in a hostile pass). It is kept for
    the request timeout (20 s) now, so a client that reuses it after 6 s is answered."""
    def answered(connection: socket.socket) -> bytes:
        """One whole answer: its head, then as many bytes as its Content-Length says."""
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = connection.recv(65536)
            assert chunk, "the server closed the connection"
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")))
        while len(body) < length:
            body += connection.recv(65536)
        return head

    with connect(served) as connection:
        ask = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
        connection.sendall(ask)
        assert answered(connection).startswith(b"HTTP/1.1 200")
        time.sleep(6)
        connection.sendall(ask)
        assert answered(connection).startswith(b"HTTP/1.1 200")


#: The impatient server's ``MEMORY_BANK_REQUEST_TIMEOUT_SECONDS``.
TIMEOUT_SECONDS = 1.5


@pytest.fixture(scope="module")
def impatient(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server that waits 1.5 s for a request to arrive, where the default waits 20."""
    served = start(tmp_path_factory.mktemp("impatient"), MEMORY_BANK_REQUEST_TIMEOUT_SECONDS=str(TIMEOUT_SECONDS))
    yield served
    served.process.terminate()
    served.process.wait(timeout=30)


def connect(served: Served) -> socket.socket:
    host, port = served.url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def read_to_close(connection: socket.socket) -> tuple[bytes, float]:
    """What the server sends until it closes, and how many seconds that took."""
    started, received = time.monotonic(), b""
    while chunk := connection.recv(65536):
        received += chunk
    return received, time.monotonic() - started


def drip(connection: socket.socket, piece: bytes, *, for_seconds: float) -> None:
    """Send ``piece`` every 0.3 s, for ``for_seconds`` or until the server closes."""
    for _ in range(round(for_seconds / 0.3)):
        time.sleep(0.3)
        try:
            connection.sendall(piece)
        except OSError:  # refused and drained already
            return


def post_head(token: bytes, length: int) -> bytes:
    """The head of a save of a ``length``-byte JSON body."""
    return b"POST /v1/memory HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (token, length)


def problem_of(received: bytes) -> tuple[int, dict[str, object]]:
    head, _, body = received.partition(b"\r\n\r\n")
    return int(head.split()[1]), httpx.Response(200, content=body).json()


def test_a_connection_that_never_sends_is_closed_without_an_answer(impatient: Served) -> None:
    """uvicorn alone kept it open for ever: a few thousand of them took every file descriptor."""
    with connect(impatient) as connection:
        received, waited = read_to_close(connection)
    assert received == b"" and TIMEOUT_SECONDS - 0.2 < waited < TIMEOUT_SECONDS + 5


@pytest.mark.parametrize("blank", [b"\r\n\r\n", b"\r\n\r"], ids=["whole", "a CR waiting for its LF"])
def test_a_connection_that_sends_only_blank_lines_is_closed_without_an_answer(impatient: Served, blank: bytes) -> None:
    with connect(impatient) as connection:
        connection.sendall(blank)
        received, waited = read_to_close(connection)
    assert received == b"" and TIMEOUT_SECONDS - 0.2 < waited < TIMEOUT_SECONDS + 5


def test_a_head_sent_a_line_at_a_time_past_the_deadline_gets_a_408_problem(impatient: Served) -> None:
    """Each line came well inside the timeout (and cancelled uvicorn's keep-alive timer): the
    deadline is on the whole head."""
    with connect(impatient) as connection:
        connection.sendall(b"GET /v1/memory HTTP/1.1\r\n")
        drip(connection, b"X-Slow: y\r\n", for_seconds=TIMEOUT_SECONDS + 0.6)
        received, _ = read_to_close(connection)
    status, document = problem_of(received)
    assert (status, document["code"]) == (408, "request_timeout") and "head" in str(document["detail"])
    assert b"connection: close" in received.lower()
    assert f"[{document['request_id']}] (unfinished request) -> 408 request_timeout" in impatient.stderr()


def test_a_body_that_stalls_gets_a_408_problem_and_the_app_writes_nothing(impatient: Served) -> None:
    """One access line and one count for the request, under its operation and the id the client got."""
    token = development_token(impatient.stderr()).encode()
    with connect(impatient) as connection:
        connection.sendall(post_head(token, 40) + b'{"content": ')
        received, waited = read_to_close(connection)
    status, document = problem_of(received)
    assert (status, document["code"]) == (408, "request_timeout") and "body paused" in str(document["detail"])
    assert waited < TIMEOUT_SECONDS + 5
    listed = httpx.get(impatient.url + "/v1/memory", headers={"Authorization": f"Bearer {token.decode()}"})
    assert listed.json()["items"] == []
    log = impatient.stderr()
    lines = [line for line in log.splitlines() if f"[{document['request_id']}]" in line]
    assert len(lines) == 1 and "POST /v1/memory -> 408" in lines[0], lines
    assert "Traceback" not in log and "ERROR" not in log and "-> 400" not in log, log[-3000:]


def test_a_body_sent_a_byte_at_a_time_is_cut_though_it_never_pauses_long(impatient: Served) -> None:
    """Each byte came well inside the timeout; after its grace a body must average 500 bytes a second."""
    token = development_token(impatient.stderr()).encode()
    with connect(impatient) as connection:
        connection.sendall(post_head(token, 40_000))
        started = time.monotonic()
        drip(connection, b" ", for_seconds=4 * TIMEOUT_SECONDS)
        received, _ = read_to_close(connection)
    status, document = problem_of(received)
    assert (status, document["code"]) == (408, "request_timeout") and "500 bytes a second" in str(document["detail"])
    assert time.monotonic() - started < 4 * TIMEOUT_SECONDS


def test_a_client_that_keeps_up_is_never_cut_and_refusals_are_counted(impatient: Served) -> None:
    """A kept-alive connection whose requests each arrive in time, some in two pieces, stays
    up for longer than the timeout; the refusals above show in /metrics as ``(unparsed)``."""
    token = development_token(impatient.stderr()).encode()
    started = time.monotonic()
    with connect(impatient) as connection:
        for _ in range(4):
            connection.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + b"\r\n")
            time.sleep(TIMEOUT_SECONDS / 3)
            connection.sendall(b"\r\n")
            assert read_response(connection).startswith(b"HTTP/1.1 200 ")
            time.sleep(TIMEOUT_SECONDS / 3)
        assert time.monotonic() - started > TIMEOUT_SECONDS
        connection.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + b"\r\n\r\n")
        metrics = read_response(connection)
    assert b'memory_bank_requests_total{code="408",operation="(unparsed)"}' in metrics  # heads
    assert b'memory_bank_requests_total{code="408",operation="postMemory"}' in metrics  # bodies
    assert b'memory_bank_requests_total{code="400",operation="postMemory"}' not in metrics
