"""A real uvicorn server on a free loopback port, for tests that need real HTTP (a browser, a fuzzer).

In-process clients skip what a deployment has: a socket, one lifespan for the whole
process, uvicorn's HTTP parsing. Browser tests cannot use them at all, and the fuzzer
should see what a client sees.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from fastapi import FastAPI

START_TIMEOUT_SECONDS = 15.0


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 (the OS picks the port) and yield its base URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, name="live-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the live server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(START_TIMEOUT_SECONDS)
