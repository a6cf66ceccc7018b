"""Bearer tokens: their format, their digest and the permissions they may grant.

A token is ``mb_`` + 32 random bytes (URL-safe base64). Being random and long, it
needs no slow hash: sha256 suffices to make a leaked table useless, and it keeps the
lookup a single indexed equality. Its first characters (``visible_prefix``) are kept
in the clear so that people can tell tokens apart in a list. Kept apart from the token table (``store.tokens``)
so that what a token is and may grant is decided without a database.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from datetime import datetime, timedelta

from memory_bank.errors import Unauthorized

TOKEN_PREFIX = "mb_"
PERMISSIONS = frozenset({"memory:read", "memory:write", "memory:admin"})

#: Random characters shown after ``mb_``: 36 bits, enough to tell an org's tokens apart;
#: the 37 characters left (about 220 bits) are what an attacker would still have to guess.
VISIBLE_CHARACTERS = 6

#: ``last_used_at`` is written only when the stored value is older than this, so a busy
#: token costs at most one write a minute, however many replicas it calls.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def digest(plaintext: str) -> str:
    """What the table keeps of a token, and looks it up by."""
    return hashlib.sha256(plaintext.encode("utf-8")).hexdigest()


def mint() -> str:
    """A new token's plaintext: shown once, never stored."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def visible_prefix(plaintext: str) -> str:
    """What a list shows of a token: ``mb_`` and its first random characters."""
    return plaintext[: len(TOKEN_PREFIX) + VISIBLE_CHARACTERS]


#: What a caller is told whose token is unknown, revoked or rotated away.
NOT_VALID = "the bearer token is not valid"


def expired(expires_at: datetime | None, now: datetime) -> Unauthorized | None:
    """The refusal of a token past its expiry at ``now``, at a request's start (``TokenStore.verify``)
    or in its write (``store.fence``); None while it lives."""
    if expires_at is None or not is_expired(expires_at, now):
        return None
    return Unauthorized(f"the bearer token expired at {expires_at:%Y-%m-%dT%H:%M:%SZ}")


def is_expired(expires_at: datetime | None, now: datetime) -> bool:
    return expires_at is not None and expires_at <= now


def use_is_stale(last_used_at: datetime | None, now: datetime) -> bool:
    """Whether a call at ``now`` should write ``last_used_at`` (see ``LAST_USED_RESOLUTION``)."""
    return last_used_at is None or now - last_used_at >= LAST_USED_RESOLUTION


def granted(permissions: Iterable[str]) -> list[str]:
    """``permissions`` sorted; ``ValueError`` naming any unknown or repeated one.

    A repeat is refused, not dropped, as the admin API's ``uniqueItems`` refuses it: a
    list that says something twice was probably meant to say something else.
    """
    asked = list(permissions)
    chosen = sorted(set(asked))
    if len(chosen) < len(asked):
        repeated = sorted({p for p in asked if asked.count(p) > 1})
        raise ValueError(f"permission(s) given more than once: {', '.join(repeated)}")
    unknown = set(chosen) - PERMISSIONS
    if unknown:
        raise ValueError(f"unknown permission(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(PERMISSIONS))}")
    return chosen
