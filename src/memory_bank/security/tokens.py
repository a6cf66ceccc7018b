"""Bearer tokens: minted once, shown once, stored only as a sha256 digest.

A token is ``mb_`` + 32 random bytes (URL-safe base64). Being random and long, it
needs no slow hash: sha256 suffices to make a leaked table useless, and it keeps the
lookup a single indexed equality.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import col

from memory_bank.security.agents import register_for_token
from memory_bank.security.principal import Principal, check_owner_id
from memory_bank.store.columns import utcnow
from memory_bank.store.database import transaction
from memory_bank.store.tables import TokenRow

TOKEN_PREFIX = "mb_"
PERMISSIONS = frozenset({"memory:read", "memory:write", "memory:admin"})


def _digest(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode("utf-8")).hexdigest()


class TokenStore:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def create(
        self, org_id: str, user_id: str, agent_id: str | None, permissions: Iterable[str]
    ) -> tuple[str, TokenRow]:
        """Mint a token; the plaintext is returned here and never again."""
        check_owner_id("org", org_id)
        check_owner_id("user", user_id)
        if agent_id is not None:
            check_owner_id("agent", agent_id)
        granted = sorted(set(permissions))
        unknown = set(granted) - PERMISSIONS
        if unknown:
            raise ValueError(f"unknown permission(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(PERMISSIONS))}")
        plaintext = TOKEN_PREFIX + secrets.token_urlsafe(32)
        row = TokenRow(
            token_hash=_digest(plaintext), org_id=org_id, user_id=user_id, agent_id=agent_id, permissions=granted
        )
        with transaction(self._engine, write=True) as session:
            register_for_token(session, org_id, agent_id)
            session.add(row)
        return plaintext, row

    def verify(self, plaintext: str) -> Principal | None:
        """The principal a live token stands for; None for unknown or revoked tokens."""
        statement = sa.select(TokenRow).where(col(TokenRow.token_hash) == _digest(plaintext), col(TokenRow.revoked_at).is_(None))
        with transaction(self._engine) as session:
            row = session.scalars(statement).first()
        if row is None:
            return None
        return Principal(
            token_id=row.id,
            org_id=row.org_id,
            user_id=row.user_id,
            agent_id=row.agent_id,
            permissions=frozenset(row.permissions),
        )

    def revoke(self, token_id: str) -> bool:
        """Stop a token from authenticating; False when no live token has this id."""
        statement = (
            sa.update(TokenRow)
            .where(col(TokenRow.id) == token_id, col(TokenRow.revoked_at).is_(None))
            .values(revoked_at=utcnow())
        )
        with transaction(self._engine, write=True) as session:
            result: sa.CursorResult[Any] = session.execute(statement)  # type: ignore[assignment]
            return result.rowcount == 1

    def count(self) -> int:
        """How many tokens exist, revoked ones included (development bootstrap asks)."""
        with transaction(self._engine) as session:
            return session.scalar(sa.select(sa.func.count()).select_from(TokenRow)) or 0
