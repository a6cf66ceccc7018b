"""The authenticated caller, resolved from a bearer token.

Owner ids come from here and nowhere else: no request schema carries an org or
user id, so a caller can only ever act as itself.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Principal:
    token_id: str
    org_id: str
    user_id: str
    agent_id: str | None
    permissions: frozenset[str]
    #: The authorization server that issued the JWT this principal came from; None for an ``mb_`` token.
    issuer: str | None = None

    def allows(self, permission: str) -> bool:
        """``memory:admin`` implies every other memory permission."""
        return permission in self.permissions or "memory:admin" in self.permissions


#: The longest org, user or agent id the tables hold (``tables.MemoryRow``).
MAX_OWNER_ID_LENGTH = 128


def check_owner_id(kind: str, value: str) -> str:
    """``value`` if it can name an org, user or agent; else ``ValueError`` saying why.

    Owner ids are compared in SQL, and MariaDB compares VARCHARs with PAD SPACE even
    under ``utf8mb4_bin``: ``'acme ' = 'acme'`` is true there and false on SQLite. An id
    with a trailing space would share another org's or user's memories on one backend
    only, so ids that differ from another only in surrounding blanks, or that are empty,
    carry control characters, or are longer than the column, are refused where they are
    minted instead of being silently truncated or padded by a database.
    """
    if not value:
        raise ValueError(f"the {kind} id is empty")
    if len(value) > MAX_OWNER_ID_LENGTH:
        raise ValueError(f"the {kind} id is longer than {MAX_OWNER_ID_LENGTH} characters")
    if value != value.strip():
        raise ValueError(f"the {kind} id {value!r} starts or ends with whitespace")
    if any(ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in value):
        raise ValueError(f"the {kind} id {value!r} contains a control character")
    return value
