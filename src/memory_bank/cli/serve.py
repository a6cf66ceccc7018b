"""``memory-bank serve``: check the settings, take the port, then serve the API and ``/mcp``.

The order is the point: a staging or production profile that lacks its shared database
or Redis is refused before anything starts, and the port is bound before a development
token is printed, so a port already in use fails with one line instead of handing out a
token for a server that never ran. The public URL follows the bound address unless
``MEMORY_BANK_PUBLIC_URL`` is set, so the 401 challenge points where clients connect.
The capability search is built before uvicorn serves (``ready_capability_search``), so no
first search trains on the event loop while other requests wait.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
import uvicorn
from rich.markup import escape

from memory_bank.cli.console import fail, settings, stderr
from memory_bank.errors import ErrorCode
from memory_bank.security.tokens import PERMISSIONS
from memory_bank.settings import Profile, Settings, start_refusals
from memory_bank.store.tokens import TokenStore

if TYPE_CHECKING:
    from memory_bank.capabilities.registry import CapabilityRegistry

#: The logger of the capability search's start-up line.
CAPABILITIES_LOGGER = "memory_bank.capabilities"
#: Where versions before the user-data-directory default kept the embedded database.
OLD_DATABASE = Path("memory-bank.db")


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``, or one line saying why not and exit 1: ``invalid_params``, as
    for a file that cannot be opened, since the --host or --port given cannot be used as it is (taken,
    not this machine's, not ours to bind, no such name)."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        bound = socket.create_server((host, port), family=family)
    except OSError as exc:
        # create_server appends the address to strerror; a name lookup failure has a negative errno
        why = os.strerror(exc.errno) if exc.errno and exc.errno > 0 else exc.strerror or str(exc)
        raise fail(ErrorCode.invalid_params, f"cannot listen on {host}:{port}: {why}") from None
    # asyncio turns Nagle off (TCP_NODELAY) only on accepted sockets whose proto is IPPROTO_TCP, and
    # create_server leaves it 0: with Nagle on, a response's body segment waits for the client to
    # acknowledge its header segment, which a client delaying its ACK does after about 40 ms.
    return socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, fileno=bound.detach())


def _bootstrap_dev_token(tokens: TokenStore, base_url: str) -> None:
    """On a development database without tokens, mint one so the first curl works; on one with
    tokens, say how to get one (a token is shown once, at its creation)."""
    if tokens.count():
        stderr.print(
            "Tokens: this database has some already, so no development token is printed (a token is shown "
            "once, when it is made); to mint one: "
            "memory-bank token create --org dev --user dev --agent dev-agent --permissions memory:read,memory:write",
            style="dim",
        )
        return
    plaintext, _ = tokens.create("dev", "dev", "dev-agent", sorted(PERMISSIONS), name="development")
    stderr.print(f"[bold]Development token[/] (org dev, user dev, agent dev-agent, all permissions):\n{plaintext}")
    stderr.print("Try it:", style="dim")
    stderr.print(f"curl -s '{base_url}/v1/memory/search?q=hello' -H 'Authorization: Bearer {plaintext}'")


def point_at_old_database(config: Settings) -> None:
    """An upgrade moved the default database out of the working directory: say where an old one is."""
    if "database_url" not in config.model_fields_set and OLD_DATABASE.is_file():
        stderr.print(
            f"Note: {OLD_DATABASE.resolve()} is not used (the database lives in the user data directory now); "
            f"to keep using it, set MEMORY_BANK_DATABASE_URL=sqlite:///{OLD_DATABASE.resolve()}",
            style="yellow",
        )


def ready_capability_search(registry: CapabilityRegistry) -> None:
    """Build the search indexes before the first request (``capabilities.warm_up``) and log the cost:
    clients that connect meanwhile wait in the listen queue, where they waited on a first search."""
    from memory_bank.capabilities.warm_up import warm_up  # with create_app: the web stack's

    started = time.perf_counter()
    indexes = warm_up(registry)
    seconds = round(time.perf_counter() - started, 2)
    logging.getLogger(CAPABILITIES_LOGGER).info(
        f"capability search ready: {indexes} indexes in {seconds} s", extra={"fields": {"indexes": indexes, "seconds": seconds}}
    )


def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port to listen on.")] = 8000,
) -> None:
    """Serve the REST API and /mcp (and, in development, print a first token)."""
    refusals = start_refusals(settings())
    for refusal in refusals:
        stderr.print(f"[red]memory-bank serve: {escape(refusal)}[/]")
    if refusals:
        raise typer.Exit(2)
    listener = listen(host, port)
    from memory_bank.api.middleware import REQUEST_HEAD_BYTES  # here: the other commands need not load the web stack
    from memory_bank.api.unparsed import problem_protocol
    from memory_bank.app import create_app

    config = settings().bound_to(host, listener.getsockname()[1])  # the real port, also for --port 0
    app = create_app(config)
    if config.env is Profile.development:
        point_at_old_database(config)
        _bootstrap_dev_token(app.state.tokens, config.public_url)
    ready_capability_search(app.state.capabilities)
    # Logging is the app's (create_app configured it): uvicorn must not install its own.
    # No websocket route exists: without ws="none", any request with "Upgrade: websocket" met
    # uvicorn's websocket handshake, which refuses in plain text.
    # An idle connection is kept as long as a next request's head may take (the protocol's own
    # deadline closes it then): uvicorn's 5 s equals httpx's pool expiry (the MCP Python SDK's
    # client), and a request sent on a connection the server was closing met a reset.
    protocol = problem_protocol(config.request_timeout_seconds, app.state.metrics)
    server = uvicorn.Config(
        app,
        log_config=None,
        http=protocol,
        ws="none",
        h11_max_incomplete_event_size=REQUEST_HEAD_BYTES,
        timeout_keep_alive=math.ceil(config.request_timeout_seconds),
    )
    uvicorn.Server(server).run(sockets=[listener])
