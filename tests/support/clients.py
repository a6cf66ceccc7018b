"""What the token and client fixtures hand out, named once for the tests and the live server."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

READ_WRITE = ("memory:read", "memory:write")
#: Writes need an agent (DESIGN §6), so tokens are bound to one unless a test asks for none.
DEFAULT_AGENT = "agent-1"

#: ``make_token(org, user, perms=READ_WRITE, agent=DEFAULT_AGENT)`` -> bearer token plaintext.
MakeToken = Callable[..., str]
#: ``make_client(org, user, perms=READ_WRITE, agent=DEFAULT_AGENT)`` -> a client acting as that user.
MakeClient = Callable[..., TestClient]
