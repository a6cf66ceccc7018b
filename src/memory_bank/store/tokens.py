"""The ``token`` table's repository: mint a row, find a live one by digest, list, revoke.

The token format, its digest and the permissions a token may grant are decided in
``security.tokens``; this module only keeps rows, so the security package holds no SQL.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import col

from memory_bank.security.principal import Principal, check_owner_id
from memory_bank.security.tokens import digest, granted, mint
from memory_bank.store.agents import register_for_token
from memory_bank.store.columns import utcnow
from memory_bank.store.database import transaction
from memory_bank.store.tables import TokenRow


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
        chosen = granted(permissions)
        plaintext = mint()
        row = TokenRow(token_hash=digest(plaintext), org_id=org_id, user_id=user_id, agent_id=agent_id, permissions=chosen)
        with transaction(self._engine, write=True) as session:
            register_for_token(session, org_id, agent_id)
            session.add(row)
        return plaintext, row

    def verify(self, plaintext: str) -> Principal | None:
        """The principal a live token stands for; None for unknown or revoked tokens."""
        statement = sa.select(TokenRow).where(col(TokenRow.token_hash) == digest(plaintext), col(TokenRow.revoked_at).is_(None))
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

    def listed(self, org_id: str | None, *, revoked: bool) -> list[TokenRow]:
        """Tokens oldest first, of one org if given; revoked ones only when asked for."""
        statement = sa.select(TokenRow).order_by(col(TokenRow.created_at), col(TokenRow.pk))
        if org_id is not None:
            statement = statement.where(col(TokenRow.org_id) == org_id)
        if not revoked:
            statement = statement.where(col(TokenRow.revoked_at).is_(None))
        with transaction(self._engine) as session:
            return list(session.scalars(statement))

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
