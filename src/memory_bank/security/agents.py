"""Which agent a write is attributed to (DESIGN §6), and the registry that says which agents exist.

Resolution order: the agent the token is bound to, else the ``agent_id`` the request
names, else fail closed. Either way the agent must be registered in the caller's org
and active; a missing agent and another org's agent get the same answer, so a caller
learns nothing about other orgs. The lookup is a fresh indexed read on every write
(no cache): replicas share nothing, and a deactivation must bite at once everywhere.

Tokens bound to an agent register that agent in the token's org when it is minted
(``register_for_token``), so ``token create --agent laptop`` and the README quick
start work without a separate ``agent create``; minting for a deactivated agent is
refused. ``agent create`` is for agents that act through agent-less tokens by naming
themselves in ``agent_id``.
"""

from __future__ import annotations

from collections.abc import Collection

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Session, col
from starlette.concurrency import run_in_threadpool

from memory_bank.errors import PermissionDenied
from memory_bank.security.audit import attribute_agent
from memory_bank.security.principal import Principal, check_owner_id
from memory_bank.store.agents_table import AgentRow
from memory_bank.store.columns import new_id
from memory_bank.store.database import transaction

#: Ids per IN (...) probe: well under every backend's bound-parameter limit.
_IN_CHUNK = 500

NO_AGENT = "no agent: use a token bound to an agent or send agent_id"


def register_for_token(session: Session, org_id: str, agent_id: str | None) -> None:
    """Make sure a token's agent exists in its org, inside the token's own transaction.

    Raises ``ValueError`` for a deactivated agent: a token for it could never write.
    """
    if agent_id is None:
        return
    row = session.get(AgentRow, (org_id, agent_id))
    if row is None:
        session.add(AgentRow(org_id=org_id, id=agent_id, name=agent_id))
    elif not row.active:
        raise ValueError(f"agent {agent_id!r} is deactivated in org {org_id!r}")


class AgentStore:
    """Create, find, list and deactivate agents; the CLI and the resolver share it."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def create(self, org_id: str, name: str) -> AgentRow:
        row = AgentRow(org_id=check_owner_id("org", org_id), id=new_id(), name=name)
        with transaction(self._engine, write=True) as session:
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

    def in_org(self, org_id: str) -> list[AgentRow]:
        statement = sa.select(AgentRow).where(col(AgentRow.org_id) == org_id).order_by(col(AgentRow.created_at), col(AgentRow.id))
        with transaction(self._engine) as session:
            return list(session.scalars(statement))

    def deactivate(self, agent_id: str, org_id: str | None = None) -> list[AgentRow]:
        """Deactivate ``agent_id`` (in ``org_id``, if given); returns the rows it matched.

        Ids chosen at ``token create --agent`` time may repeat across orgs, so more
        than one match without an org is refused and nothing changes.
        """
        statement = sa.select(AgentRow).where(col(AgentRow.id) == agent_id)
        if org_id is not None:
            statement = statement.where(col(AgentRow.org_id) == org_id)
        with transaction(self._engine, write=True) as session:
            rows = list(session.scalars(statement))
            if len(rows) == 1:
                rows[0].active = False
        return rows


class AgentResolver:
    def __init__(self, agents: AgentStore) -> None:
        self._agents = agents

    async def resolve_agent(self, principal: Principal, requested_agent_id: str | None) -> str:
        """The agent this write acts as, or ``permission_denied``; also names it in the audit event.

        Call it before every write operation, with the ``agent_id`` the request names
        (None where the operation has no such field).
        """
        agent_id = principal.agent_id or requested_agent_id
        if agent_id is None:
            raise PermissionDenied(NO_AGENT)
        row = await run_in_threadpool(self._agents.find, principal.org_id, agent_id)
        if row is None:
            raise PermissionDenied(f"agent {agent_id!r} is not registered in this org")
        if not row.active:
            raise PermissionDenied(f"agent {agent_id!r} is deactivated")
        attribute_agent(agent_id)
        return agent_id

    async def registered(self, org_id: str, agent_ids: Collection[str]) -> set[str]:
        """``AgentStore.registered``, off the event loop."""
        return await run_in_threadpool(self._agents.registered, org_id, agent_ids)
