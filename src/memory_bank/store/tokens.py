"""The ``token`` table's repository: mint, verify, list, find, rotate and revoke tokens.

The token format, its digest, its visible prefix and the permissions a token may grant
are decided in ``security.tokens``; this module only keeps rows, so the security
package holds no SQL. Every lookup by id takes an optional org: the admin API passes
the caller's, so another org's token is as absent as a missing one; the CLI, which
works on the whole database, passes none.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import suppress
from datetime import datetime
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import col

from memory_bank.errors import Conflict
from memory_bank.owner_ids import check_owner_id
from memory_bank.security.principal import Principal
from memory_bank.security.tokens import (
    digest,
    expired,
    granted,
    is_expired,
    mint,
    use_is_stale,
    visible_prefix,
)
from memory_bank.store.agents import register_for_token
from memory_bank.store.columns import utcnow
from memory_bank.store.contention import DatabaseBusy, retried_after_deadlock
from memory_bank.store.database import transaction
from memory_bank.store.fence import writing_by
from memory_bank.store.keyset import TOKENS
from memory_bank.store.tables import TokenRow

#: A SELECT or an UPDATE of the token table, narrowed to one token by ``TokenStore._by_id``.
Statement = TypeVar("Statement", sa.Select[TokenRow], sa.Update)


class TokenStore:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def create(
        self,
        org_id: str,
        user_id: str,
        agent_id: str | None,
        permissions: Iterable[str],
        *,
        name: str | None = None,
        expires_at: datetime | None = None,
        by: Principal | None = None,
    ) -> tuple[str, TokenRow]:
        """Mint a token; the plaintext is returned here and never again.

        ``by``: the admin asking (None: the CLI's operator), fenced as every write is
        (``store.fence.writing_by``), as are ``revoke`` and ``rotate``.
        """
        check_owner_id("org", org_id)
        check_owner_id("user", user_id)
        if agent_id is not None:
            check_owner_id("agent", agent_id)
        chosen = granted(permissions)
        plaintext = mint()
        row = TokenRow(
            token_hash=digest(plaintext),
            prefix=visible_prefix(plaintext),
            name=name,
            org_id=org_id,
            user_id=user_id,
            agent_id=agent_id,
            permissions=chosen,
            expires_at=expires_at,
        )
        with writing_by(self._engine, by) as session:
            register_for_token(session, org_id, agent_id)
            session.add(row)
        return plaintext, row

    def verify(self, plaintext: str) -> Principal | None:
        """The principal a live token stands for; None for unknown or revoked tokens.

        An expired token is ``unauthorized`` saying so. The last use is recorded only
        when the stored one is stale (``security.tokens.LAST_USED_RESOLUTION``).
        """
        statement = sa.select(TokenRow).where(col(TokenRow.token_hash) == digest(plaintext), col(TokenRow.revoked_at).is_(None))
        with transaction(self._engine) as session:
            row = session.scalars(statement).first()
        if row is None:
            return None
        now = utcnow()
        refusal = expired(row.expires_at, now)
        if refusal is not None:
            raise refusal
        if use_is_stale(row.last_used_at, now):
            self._record_use(row, now)
        return Principal(
            token_id=row.id,
            org_id=row.org_id,
            user_id=row.user_id,
            agent_id=row.agent_id,
            permissions=frozenset(row.permissions),
            secret_digest=row.token_hash,
        )

    def _record_use(self, row: TokenRow, now: datetime) -> None:
        """Stamp the use unless another request (or replica) stamped it since ``row`` was read.

        Bookkeeping only: a call is never refused, nor kept waiting, because its stamp met
        a lock (``wait=False``: a read waited out SQLite's busy timeout behind another
        process's write); the next call of the token tries again.
        """
        unchanged = (
            col(TokenRow.last_used_at).is_(None)
            if row.last_used_at is None
            else col(TokenRow.last_used_at) == row.last_used_at
        )
        statement = sa.update(TokenRow).where(col(TokenRow.pk) == row.pk, unchanged).values(last_used_at=now)
        with suppress(DatabaseBusy), transaction(self._engine, write=True, wait=False) as session:
            session.execute(statement)

    def page(
        self, org_id: str | None, *, revoked: bool, limit: int, cursor: str | None = None
    ) -> tuple[list[TokenRow], str | None]:
        """One page of tokens oldest first, of one org if given, revoked ones only when asked for; and the next cursor."""
        statement = sa.select(TokenRow)
        if org_id is not None:
            statement = statement.where(col(TokenRow.org_id) == org_id)
        if not revoked:
            statement = statement.where(col(TokenRow.revoked_at).is_(None))
        return TOKENS.page(self._engine, statement, limit, cursor, descending=False)

    def find(self, token_id: str, org_id: str | None = None) -> TokenRow | None:
        """The token with this id (in ``org_id``, if given), revoked or not."""
        with transaction(self._engine) as session:
            return session.scalars(self._by_id(sa.select(TokenRow), token_id, org_id)).first()

    @retried_after_deadlock  # two admins revoking each other's tokens: each fence holds what the other's UPDATE wants
    def revoke(self, token_id: str, org_id: str | None = None, by: Principal | None = None) -> bool:
        """Stop a token from authenticating; False when no live token has this id (in ``org_id``)."""
        statement = self._by_id(sa.update(TokenRow), token_id, org_id).where(col(TokenRow.revoked_at).is_(None))
        with writing_by(self._engine, by) as session:
            result: sa.CursorResult[Any] = session.execute(statement.values(revoked_at=utcnow()))  # type: ignore[assignment]
            return result.rowcount == 1

    @retried_after_deadlock  # as ``revoke``
    def rotate(self, token_id: str, org_id: str | None = None, by: Principal | None = None) -> tuple[str, TokenRow] | None:
        """A new secret for a live token, same id and grants; the old secret stops working at once.

        None when no live token has this id. The swap is conditional on the secret read,
        so of two rotations whose transactions overlap one wins and the other is
        ``conflict``: no rotation is answered with a secret that another one replaced
        before it committed; one that a revocation overtook finds no live token (None).
        Rotations that the database serialises apply one after another, each replacing the
        last one's secret, as the spec says. An expired token is ``conflict`` too: rotation
        keeps the expiry, so its new secret would be born dead; the answer says to create a
        token instead.
        """
        plaintext = mint()
        with writing_by(self._engine, by) as session:
            row = session.scalars(
                self._by_id(sa.select(TokenRow), token_id, org_id).where(col(TokenRow.revoked_at).is_(None))
            ).first()
            if row is None:
                return None
            if is_expired(row.expires_at, utcnow()):
                raise Conflict(
                    f"token {token_id} expired at {row.expires_at:%Y-%m-%dT%H:%M:%SZ} and rotation keeps the expiry; "
                    "create a new token instead"
                )
            live = (col(TokenRow.pk) == row.pk, col(TokenRow.revoked_at).is_(None))
            swap = (
                sa.update(TokenRow)
                .where(*live, col(TokenRow.token_hash) == row.token_hash)
                .values(token_hash=digest(plaintext), prefix=visible_prefix(plaintext))
                .execution_options(synchronize_session=False)
            )
            result: sa.CursorResult[Any] = session.execute(swap)  # type: ignore[assignment]
            if result.rowcount != 1:
                # A locking read sees what the overlapping request committed, past this snapshot.
                if session.scalar(sa.select(col(TokenRow.pk)).where(*live).with_for_update(read=True)) is None:
                    return None  # revoked meanwhile: no live token has this id
                raise Conflict(f"token {token_id} was rotated by another request at the same time; list it and retry")
            session.refresh(row)
        return plaintext, row

    @staticmethod
    def _by_id(statement: Statement, token_id: str, org_id: str | None) -> Statement:
        """``statement`` narrowed to the token with this id, in ``org_id`` if given."""
        statement = statement.where(col(TokenRow.id) == token_id)
        return statement if org_id is None else statement.where(col(TokenRow.org_id) == org_id)

    def count(self) -> int:
        """How many tokens exist, revoked ones included (development bootstrap asks)."""
        with transaction(self._engine) as session:
            return session.scalar(sa.select(sa.func.count()).select_from(TokenRow)) or 0
