"""Which agent a write is attributed to (DESIGN §6): the agent policy, over the agent registry.

Resolution order: the agent the token is bound to, else the ``agent_id`` the request
names, else fail closed. Either way the agent must be registered in the caller's org
and active; a missing agent and another org's agent get the same answer, so a caller
learns nothing about other orgs. The lookup is a fresh indexed read on every write
(no cache): replicas share nothing, and a deactivation must bite at once everywhere.
It is a read before the write, though: a write that passed it just before a deactivation
would still commit after the admin was answered. The write's own transaction therefore
reads the agent again (``store.fence.writing_as``), and that read is what makes the
deactivation final; this one answers early and names the agent in the audit event.

The registry is any ``AgentDirectory`` (``store.agents.AgentStore`` in the app), so the
policy holds no SQL; the resolved agent is reported to a callable it is given
(``observability.audit.attribute_agent`` in the app), so security imports nothing of
observability, which sits above it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Protocol

from starlette.concurrency import run_in_threadpool

from memory_bank.errors import PermissionDenied
from memory_bank.security.principal import Principal

NO_AGENT = "no agent: use a token bound to an agent or send agent_id"
#: What a write naming an unknown agent is told to do: agent ids are the directory's, not free text.
UNREGISTERED_HINT = (
    "; agent_id takes the id an admin got on registering it (memory-bank agent create, or POST /v1/admin/agents)"
)


class Agent(Protocol):
    @property
    def active(self) -> bool: ...


class AgentDirectory(Protocol):
    def find(self, org_id: str, agent_id: str) -> Agent | None: ...

    def registered(self, org_id: str, agent_ids: Collection[str]) -> set[str]: ...


class AgentResolver:
    def __init__(self, agents: AgentDirectory, attribute: Callable[[str], None]) -> None:
        """``attribute`` is told each agent a call resolves to, to name it in the call's audit event."""
        self._agents = agents
        self._attribute = attribute

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
            raise PermissionDenied(f"agent {agent_id!r} is not registered in this org{UNREGISTERED_HINT}")
        if not row.active:
            raise PermissionDenied.deactivated(agent_id)
        self._attribute(agent_id)
        return agent_id

    async def registered(self, org_id: str, agent_ids: Collection[str]) -> set[str]:
        """The directory's ``registered``, off the event loop."""
        return await run_in_threadpool(self._agents.registered, org_id, agent_ids)
