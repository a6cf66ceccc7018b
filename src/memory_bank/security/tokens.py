"""Bearer tokens: their format, their digest and the permissions they may grant.

A token is ``mb_`` + 32 random bytes (URL-safe base64). Being random and long, it
needs no slow hash: sha256 suffices to make a leaked table useless, and it keeps the
lookup a single indexed equality. Kept apart from the token table (``store.tokens``)
so that what a token is and may grant is decided without a database.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable

TOKEN_PREFIX = "mb_"
PERMISSIONS = frozenset({"memory:read", "memory:write", "memory:admin"})


def digest(plaintext: str) -> str:
    """What the table keeps of a token, and looks it up by."""
    return hashlib.sha256(plaintext.encode("utf-8")).hexdigest()


def mint() -> str:
    """A new token's plaintext: shown once, never stored."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def granted(permissions: Iterable[str]) -> list[str]:
    """``permissions`` sorted and deduplicated; ``ValueError`` naming any unknown one."""
    chosen = sorted(set(permissions))
    unknown = set(chosen) - PERMISSIONS
    if unknown:
        raise ValueError(f"unknown permission(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(PERMISSIONS))}")
    return chosen
