"""The write fence: every write transaction first reads again what let the caller in.

Authentication (``api.auth``) and the agent check (``security.agents``) are reads of their
own, made before the write starts: a write that passed them just before a deactivation, a
revocation or a rotation still committed after the admin was answered (up to 170 ms later
for a deactivation; 0.4 s after a revocation and 1.2 s after a rotation, on both backends).
``writing_as`` reads the caller's token and agent again inside the write's own transaction,
so that an answered revocation, rotation or deactivation is final.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from memory_bank.errors import PermissionDenied, Unauthorized
from memory_bank.security.principal import Principal
from memory_bank.security.tokens import NOT_VALID, expired
from memory_bank.store.columns import utcnow
from memory_bank.store.database import transaction
from memory_bank.store.tables import AgentRow, TokenRow


@contextmanager
def writing_as(
    engine: Engine, principal: Principal | None, agent_id: str | None, *, read_committed: bool = False
) -> Iterator[Session]:
    """A write transaction (``transaction(write=True)``) of ``principal`` acting as ``agent_id``;
    refused, as the request would have been refused at its start, if the token that
    authenticated it is no longer live (``unauthorized``: revoked, rotated away or expired) or
    the agent is deactivated (``PermissionDenied.deactivated``, as ``resolve_agent`` refuses).

    The token's row (by its id, compared with the digest of the secret sent,
    ``Principal.secret_digest``), then the agent's, are read first, before the write takes any other lock, and on MySQL/MariaDB with a
    share lock held until COMMIT. A locking read sees the latest committed row whatever the
    transaction's isolation level or snapshot (REPEATABLE READ would otherwise show a plain
    read the row as the transaction's first read found it). A revocation's or rotation's
    UPDATE (``TokenStore``), or a deactivation's (``AgentStore.deactivate``), waits for the
    writes already past these reads, and the writes after it wait for it and then read it. So
    once a revocation, rotation or deactivation has committed, and been answered, no write made
    with that token, or of that agent, commits. Share locks do not conflict with each other, so
    writes of one token or agent do not queue behind one another; being every such
    transaction's first locks, taken in one order (token, then agent), they close no cycle with
    the locks taken after them. On SQLite a write transaction is alone with the file (``BEGIN
    IMMEDIATE``), so the reads alone suffice. The cost is one indexed read each.

    Not fenced: a principal with no token row (a JWT, verified by the authorization server's
    keys, which this service cannot revoke; the CLI's operator) and ``principal`` None (the
    CLI's admin commands); ``agent_id`` None (the operator's CLI import writes as no agent). Nor
    does a missing agent row refuse: agents are never deleted, so ``resolve_agent`` has already
    told an unregistered agent, and store callers that name no registered agent keep writing.
    """
    with transaction(engine, write=True, read_committed=read_committed) as session:
        if principal is not None and principal.secret_digest is not None:
            _check_token(session, principal.token_id, principal.secret_digest)
        if principal is not None and agent_id is not None:
            _check_agent(session, principal.org_id, agent_id)
        yield session


def writing_by(engine: Engine, principal: Principal | None) -> AbstractContextManager[Session]:
    """``writing_as`` the caller's own agent: an admin write (tokens, agents) of ``principal``, or
    of the CLI's operator (None). A revoked admin token mints, rotates or revokes no token."""
    return writing_as(engine, principal, None if principal is None else principal.agent_id)


def _check_token(session: Session, token_id: str, secret_digest: str) -> None:
    """``unauthorized`` unless the token is live with this secret: rotation replaced its digest,
    revocation stamped it.

    Read by id, not by digest: a rotation's UPDATE locks the row, then the digest's index
    entries it rewrites; a share lock taken through that index, then on the row, closed a
    cycle with it (deadlocks of rotations amid writes on MariaDB). The id's index is one no
    UPDATE of a token rewrites.
    """
    statement = sa.select(col(TokenRow.token_hash), col(TokenRow.revoked_at), col(TokenRow.expires_at)).where(
        col(TokenRow.id) == token_id
    )
    row = session.execute(statement.with_for_update(read=True)).first()
    if row is None or row.token_hash != secret_digest or row.revoked_at is not None:
        raise Unauthorized(NOT_VALID)
    refusal = expired(row.expires_at, utcnow())
    if refusal is not None:
        raise refusal


def _check_agent(session: Session, org_id: str, agent_id: str) -> None:
    statement = sa.select(col(AgentRow.id), col(AgentRow.active)).where(
        col(AgentRow.org_id) == org_id, col(AgentRow.id) == agent_id
    )
    for found, active in session.execute(statement.with_for_update(read=True)):
        if found == agent_id and not active:  # exact: MariaDB's PAD SPACE also matches ``agent_id + " "``
            raise PermissionDenied.deactivated(agent_id)
