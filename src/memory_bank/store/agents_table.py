"""The ``agent`` table: which agents exist in an org and whether they may still write.

Agent ids are namespaced by org (the key is ``(org_id, id)``): two orgs may both
run an agent called ``laptop``, and a lookup outside the caller's org finds nothing,
so a cross-org agent and a missing one are indistinguishable to the caller. Ids are
strings of up to 128 characters, like ``memory.agent_id`` and ``token.agent_id``,
so a name chosen at ``token create --agent`` time can be an id too.
"""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel

from memory_bank.store.columns import UTCDateTime, utcnow


class AgentRow(SQLModel, table=True):
    __tablename__ = "agent"

    org_id: str = Field(max_length=128, primary_key=True)
    id: str = Field(max_length=128, primary_key=True)
    name: str = Field(max_length=128)
    active: bool = True
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
