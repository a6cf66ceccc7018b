"""What an unauthenticated client can make the server hold: big bodies without a token.

    .venv/bin/python bench/unauthenticated_bodies.py [--megabytes 300] [--rounds 3] [--json]

One ``memory-bank serve`` on loopback with a fresh SQLite. Each round sends
``POST /v1/memory`` with no token and a body of the given size (streamed until the
server answers or stops reading), while a second connection times ``GET /health``
to see whether the event loop stalls. A last request only declares
``Content-Length: 1000000000``. Printed: the server's resident memory before and its
peak after (VmRSS / VmHWM), per round the answer, its latency, the bytes the server
let in and the slowest /health; and how long the declared gigabyte took to answer.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
MEMORY_BANK = str(Path(sys.executable).with_name("memory-bank"))
CHUNK = b"x" * (1 << 20)
#: How long a round waits for an answer at most.
ANSWER_TIMEOUT_S = 60.0


def memory_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(directory: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {**os.environ, "MEMORY_BANK_DATABASE_URL": f"sqlite:///{Path(directory) / 'memory-bank.db'}"}
    server = subprocess.Popen(
        [MEMORY_BANK, "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 90
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return server, port
        except httpx.TransportError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("memory-bank serve did not come up")
        time.sleep(0.1)


def status_line(sock: socket.socket) -> str:
    """The first line of the answer, or what happened instead."""
    sock.settimeout(ANSWER_TIMEOUT_S)
    try:
        data = sock.recv(4096)
    except TimeoutError:
        return "no answer"
    except OSError as exc:
        return f"connection error: {exc.__class__.__name__}"
    return data.split(b"\r\n", 1)[0].decode("latin-1") if data else "closed without an answer"


def upload(port: int, megabytes: int) -> dict[str, object]:
    """One unauthenticated body of ``megabytes`` MB; how far it got and what came back."""
    started = time.perf_counter()
    sent = 0
    with socket.create_connection(("127.0.0.1", port)) as sock:
        head = f"POST /v1/memory HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {megabytes << 20}\r\n\r\n"
        sock.sendall(head.encode())
        sock.settimeout(5)
        try:
            for _ in range(megabytes):  # bounded: the declared size at most
                sock.sendall(CHUNK)
                sent += len(CHUNK)
        except OSError:
            pass  # the server answered and stopped reading
        answer = status_line(sock)
    return {"answer": answer, "seconds": round(time.perf_counter() - started, 3), "megabytes_written": sent >> 20}


def health_watch(port: int, stop: threading.Event, worst: list[float]) -> None:
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        while not stop.is_set():
            started = time.perf_counter()
            client.get("/health")
            worst[0] = max(worst[0], time.perf_counter() - started)
            time.sleep(0.05)


def declared_gigabyte(port: int) -> dict[str, object]:
    started = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST /v1/memory HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000000\r\n\r\n")
        answer = status_line(sock)
    return {"answer": answer, "seconds": round(time.perf_counter() - started, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        server, port = start_server(directory)
        try:
            before = memory_kb(server.pid, "VmRSS")
            rounds = []
            for _ in range(args.rounds):
                stop, worst = threading.Event(), [0.0]
                watcher = threading.Thread(target=health_watch, args=(port, stop, worst))
                watcher.start()
                result = upload(port, args.megabytes)
                stop.set()
                watcher.join()
                rounds.append({**result, "slowest_health_ms": round(worst[0] * 1000, 1)})
            figures = {
                "rss_before_mb": round(before / 1024, 1),
                "rss_peak_mb": round(memory_kb(server.pid, "VmHWM") / 1024, 1),
                "rounds": rounds,
                "declared_1gb_without_token": declared_gigabyte(port),
            }
        finally:
            server.terminate()
            server.wait(timeout=20)
    if args.json:
        print(json.dumps(figures))
        return
    print(f"server RSS before {figures['rss_before_mb']} MB, peak {figures['rss_peak_mb']} MB")
    for n, r in enumerate(rounds, 1):
        print(f"round {n}: {r['answer']!r} after {r['seconds']} s, {r['megabytes_written']} MB written, "
              f"slowest /health {r['slowest_health_ms']} ms")
    print(f"declared 1 GB without token: {figures['declared_1gb_without_token']}")


if __name__ == "__main__":
    main()
