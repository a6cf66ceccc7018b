"""Idempotency keys: what makes a repeated save return the first record.

A key is stored per organisation (UNIQUE(org_id, idempotency_key)) and is derived
from either the client's ``Idempotency-Key`` header or the content itself (DESIGN
§4). Both derivations also take the user: without it, two users of one organisation
saving the same words with no agent would share a key, and the second would be
handed the first user's private memory.
"""

from __future__ import annotations

import hashlib
import unicodedata

#: Marks keys derived from content; those are released when the memory is deleted,
#: so the same words can be saved again. Header keys are the client's and stay.
CONTENT_KEY_PREFIX = "sha256:"
_HEADER_KEY_PREFIX = "key:"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def normalized(content: str) -> str:
    return unicodedata.normalize("NFC", content).strip()


def content_hash(content: str) -> str:
    """Fingerprint of the words alone: tells a replayed header key from a reused one."""
    return _sha256(normalized(content))


def content_key(org_id: str, user_id: str, agent_id: str | None, content: str) -> str:
    return CONTENT_KEY_PREFIX + _sha256(f"{org_id}:{user_id}:{agent_id or ''}:{normalized(content)}")


def header_key(user_id: str, header: str) -> str:
    """Hashed so that any header (up to 255 chars) plus the user fits the column."""
    return _HEADER_KEY_PREFIX + _sha256(f"{user_id}:{header}")
