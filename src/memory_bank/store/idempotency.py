"""Idempotency keys: what makes a repeated save return the first record.

A key is stored per organisation (UNIQUE(org_id, idempotency_key)) and is derived
from either the client's ``Idempotency-Key`` header or the content itself (DESIGN
§4). Both derivations also take the user: without it, two users of one organisation
saving the same words with no agent would share a key, and the second would be
handed the first user's private memory.

The parts are hashed as a JSON array, not joined with a separator: ids may contain
any separator (user ``a:b`` with header ``c`` and user ``a`` with header ``b:c``
joined to the same text), whereas a JSON array reads back into exactly its parts.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Collection

import sqlalchemy as sa
from sqlmodel import Session, col

from memory_bank.store.tables import MemoryRow

#: Keep the two kinds of key apart, so a header can never reproduce a content key.
#: Deleting a memory releases both kinds (``MemoryStore.delete``): a forgotten memory
#: must not hold its key, or saving the same words again would answer with a tombstone.
#: A header key stays on the version the save made (a replay answers with the first
#: record); a content key follows the chain's current version (``MemoryStore._supersede``),
#: since it stands for the words the memory says now, and a key a chain lets go of passes to
#: another current memory that says those words (``memories._hand_on``).
CONTENT_KEY_PREFIX = "sha256:"
_HEADER_KEY_PREFIX = "key:"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _digest(*parts: str | None) -> str:
    """An unambiguous hash of ``parts``: distinct tuples never share an encoding."""
    return _sha256(json.dumps(parts, ensure_ascii=False, separators=(",", ":")))


def normalized(content: str) -> str:
    return unicodedata.normalize("NFC", content).strip()


def content_hash(content: str) -> str:
    """Fingerprint of the words alone: tells a replayed header key from a reused one."""
    return _sha256(normalized(content))


def content_key(org_id: str, user_id: str, agent_id: str | None, content: str) -> str:
    return CONTENT_KEY_PREFIX + _digest(org_id, user_id, agent_id, normalized(content))


def header_key(org_id: str, user_id: str, header: str) -> str:
    """Hashed so that any header (up to 255 chars) plus its owner fits the column."""
    return _HEADER_KEY_PREFIX + _digest(org_id, user_id, header)


def release_content_keys(session: Session, chains: Collection[str]) -> None:
    """Free the content keys the versions of ``chains`` hold, for their new current version to
    take its own (``MemoryStore._move_content_key``, and an import that continues a chain)."""
    _release(session, chains, col(MemoryRow.idempotency_key).startswith(CONTENT_KEY_PREFIX))


def release_every_key(session: Session, chains: Collection[str]) -> None:
    """Free every key the versions of deleted ``chains`` hold, header and content alike: a
    forgotten memory holds none (``MemoryStore.delete``, and an import of a tombstone)."""
    _release(session, chains, col(MemoryRow.idempotency_key).is_not(None))


def _release(session: Session, chains: Collection[str], held: sa.ColumnElement[bool]) -> None:
    if chains:
        session.execute(
            sa.update(MemoryRow)
            .where(col(MemoryRow.chain_id).in_(chains), held)
            .values(idempotency_key=None)
            .execution_options(synchronize_session=False)
        )
