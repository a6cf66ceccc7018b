"""The ``agent`` table's repository: which agents exist in an org and whether they may still write.

Tokens bound to an agent register that agent in the token's org when it is minted
(``register_for_token``), so ``token create --agent laptop`` and the README quick
start work without a separate ``agent create``; minting for a deactivated agent is
refused. ``agent create`` is for agents that act through agent-less tokens by naming
themselves in ``agent_id``. Which agent a write may act as is decided in
``security.agents``; this module only keeps rows, so the security package holds no SQL.

Every write an agent makes runs in ``store.fence.writing_as``, which reads the agent's row
again inside the write's transaction: the check ``security.agents`` makes before the write is
a read of its own, and writes that passed it just before a deactivation committed after the
admin was answered (up to 170 ms later, of 150 at once on MariaDB).
"""

from __future__ import annotations

from collections.abc import Collection

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from memory_bank.owner_ids import check_new_agent_id, check_owner_id
from memory_bank.security.principal import Principal
from memory_bank.store.columns import new_id
from memory_bank.store.contention import retried_after_deadlock
from memory_bank.store.database import transaction
from memory_bank.store.fence import writing_by
from memory_bank.store.keyset import AGENTS
from memory_bank.store.tables import AgentRow

#: Ids per IN (...) probe: well under every backend's bound-parameter limit.
_IN_CHUNK = 500


class UnusableAgent(ValueError):
    """A token was asked for an agent it should not act as: a deactivated one (the token
    could never write), or a new id that is another agent's name (:class:`AgentIdIsAName`)."""


class AgentIdIsAName(UnusableAgent):
    """A new agent id that another agent of the org has as its name: a conflict with that
    agent, not a malformed id, so the API answers 409."""


def register_for_token(session: Session, org_id: str, agent_id: str | None) -> None:
    """Make sure a token's agent exists in its org, inside the token's own transaction.

    Raises ``UnroutableAgentId`` for a new id no URL can carry (``check_new_agent_id``),
    ``UnusableAgent`` for a deactivated agent, and for a new id that an agent of the
    org has as its name: ``agent create --name ci-bot`` answers a random id, and a token
    then minted for ``ci-bot`` would register a second agent and act as it, untouched by
    deactivating the first (a new user's pass).
    """
    if agent_id is None:
        return
    if session.get(AgentRow, (org_id, agent_id)) is None:
        check_new_agent_id(agent_id)
        named = session.execute(
            sa.select(col(AgentRow.id)).where(col(AgentRow.org_id) == org_id, col(AgentRow.name) == agent_id).limit(1)
        ).scalar_one_or_none()
        if named is not None:
            raise AgentIdIsAName(
                f"no agent of org {org_id!r} has the id {agent_id!r}, but agent {named!r} is named so; "
                f"a token names its agent by id: use {named!r}"
            )
        try:
            with session.begin_nested():  # tokens minted at once for one new agent: one insert wins
                session.add(AgentRow(org_id=org_id, id=agent_id, name=agent_id))
        except sa.exc.IntegrityError:
            pass  # registered by a request that committed first (on MariaDB this was a 500)
    # A locking read sees that request's row whatever this transaction's snapshot holds.
    active = session.execute(
        sa.select(col(AgentRow.active)).where(col(AgentRow.org_id) == org_id, col(AgentRow.id) == agent_id).with_for_update(read=True)
    ).scalar_one()
    if not active:
        raise UnusableAgent(f"agent {agent_id!r} is deactivated in org {org_id!r}")


class AgentStore:
    """Create, find, list, deactivate and reactivate agents; the CLI, the admin API and the resolver share it."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def create(self, org_id: str, name: str, by: Principal | None = None) -> AgentRow:
        """Register an agent; ``by``: the admin asking (None: the CLI's operator), fenced as every
        write is (``store.fence.writing_by``), as are ``deactivate`` and ``reactivate``."""
        row = AgentRow(org_id=check_owner_id("org", org_id), id=new_id(), name=name)
        with writing_by(self._engine, by) as session:
            session.add(row)
        return row

    def find(self, org_id: str, agent_id: str) -> AgentRow | None:
        """The agent with exactly this id: MariaDB's PAD SPACE would also match ``agent_id + " "``."""
        with transaction(self._engine) as session:
            row = session.get(AgentRow, (org_id, agent_id))
        return row if row is not None and (row.org_id, row.id) == (org_id, agent_id) else None

    def registered(self, org_id: str, agent_ids: Collection[str]) -> set[str]:
        """Which of ``agent_ids`` are agents of ``org_id``, active or not (an import keeps their names)."""
        found: set[str] = set()
        wanted = sorted(agent_ids)
        with transaction(self._engine) as session:
            for start in range(0, len(wanted), _IN_CHUNK):
                statement = sa.select(col(AgentRow.id)).where(
                    col(AgentRow.org_id) == org_id, col(AgentRow.id).in_(wanted[start : start + _IN_CHUNK])
                )
                found.update(session.scalars(statement))
        return found

    def page(self, org_id: str, *, limit: int, cursor: str | None = None) -> tuple[list[AgentRow], str | None]:
        """One page of the org's agents oldest first, and the cursor of the next page (None on the last)."""
        statement = sa.select(AgentRow).where(col(AgentRow.org_id) == org_id)
        return AGENTS.page(self._engine, statement, limit, cursor, descending=False)

    def deactivate(self, agent_id: str, org_id: str | None = None, by: Principal | None = None) -> list[AgentRow]:
        """Deactivate ``agent_id`` (in ``org_id``, if given); returns the rows it matched.

        Ids chosen at ``token create --agent`` time may repeat across orgs, so more
        than one match without an org is refused and nothing changes.
        """
        return self._set_active(agent_id, org_id, by, active=False)

    def reactivate(self, agent_id: str, org_id: str | None = None, by: Principal | None = None) -> list[AgentRow]:
        """Let a deactivated agent write again; matched as ``deactivate`` matches."""
        return self._set_active(agent_id, org_id, by, active=True)

    @retried_after_deadlock  # an agent's token (de)activating it: its fence's share lock, then the UPDATE's
    def _set_active(self, agent_id: str, org_id: str | None, by: Principal | None, *, active: bool) -> list[AgentRow]:
        statement = sa.select(AgentRow).where(col(AgentRow.id) == agent_id)
        if org_id is not None:
            statement = statement.where(col(AgentRow.org_id) == org_id)
        with writing_by(self._engine, by) as session:
            rows = [row for row in session.scalars(statement) if row.id == agent_id]  # exact: no PAD SPACE match
            if len(rows) == 1:
                rows[0].active = active
        return rows
