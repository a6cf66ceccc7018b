"""HTTP/1.1 over one socket the test holds, to see what a server does with the connection itself.

Client libraries reconnect quietly and refuse to send a Content-Length they do not
mean; these helpers (h11 for the framing) show whether a response came at all and
whether the same connection still serves the next request.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import h11


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class RawConnection:
    """One keep-alive connection; ``request`` sends and reads one exchange on it."""

    def __init__(self, sock: socket.socket, host: str) -> None:
        self.sock = sock
        self.host = host
        self.h11 = h11.Connection(our_role=h11.CLIENT)

    def send_head(self, method: str, path: str, headers: dict[str, str]) -> None:
        fields = [("Host", self.host), *headers.items()]
        self.sock.sendall(self.h11.send(h11.Request(method=method, target=path, headers=fields)) or b"")

    def send_data(self, data: bytes) -> None:
        self.sock.sendall(self.h11.send(h11.Data(data=data)) or b"")

    def end(self) -> None:
        self.sock.sendall(self.h11.send(h11.EndOfMessage()) or b"")

    def read_answer(self) -> Answer:
        """The next response; raises ``ConnectionError`` if the server closes instead of answering."""
        status, headers, body = 0, {}, b""
        while True:
            event = self.h11.next_event()
            if event is h11.NEED_DATA:
                data = self.sock.recv(65536)
                if not data:
                    raise ConnectionError("the server closed the connection without an answer")
                self.h11.receive_data(data)
            elif isinstance(event, h11.Response):
                status = event.status_code
                headers = {k.decode().lower(): v.decode() for k, v in event.headers}
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                return Answer(status, headers, body)
            elif isinstance(event, h11.ConnectionClosed):
                raise ConnectionError("the server closed the connection")

    def request(self, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b"") -> Answer:
        sent = dict(headers or {})
        if body:
            sent["Content-Length"] = str(len(body))
        self.send_head(method, path, sent)
        if body:
            self.send_data(body)
        self.end()
        answer = self.read_answer()
        self.h11.start_next_cycle()
        return answer

    def still_open(self) -> bool:
        """Whether the server kept the connection: it still answers a request on it."""
        try:
            return self.request("GET", "/health").status == 200
        except (ConnectionError, OSError, h11.ProtocolError):
            return False


def read_response(sock: socket.socket) -> bytes:
    """One response with a Content-Length, read off a socket written to by hand: its head, then as
    many body bytes as it says (h11's client would refuse a request it did not send itself)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")))
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


@contextmanager
def connect(base_url: str, timeout: float = 10.0) -> Iterator[RawConnection]:
    parts = urlsplit(base_url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    with socket.create_connection((host, port), timeout=timeout) as sock:
        yield RawConnection(sock, f"{host}:{port}")
