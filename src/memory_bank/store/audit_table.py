"""The ``audit_event`` table: one row per REST call or MCP tool call (DESIGN §6).

It holds who, what operation, how long and how it ended; never content,
arguments or tokens, so the audit trail can be kept longer and shown to more
people than the memories themselves.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from memory_bank.store.columns import SurrogateKey, UTCDateTime


class AuditEventRow(SQLModel, table=True):
    __tablename__ = "audit_event"
    __table_args__ = (sa.Index("ix_audit_event_org_requested", "org_id", "requested_at"),)

    pk: int | None = Field(default=None, primary_key=True, sa_type=SurrogateKey)
    request_id: str | None = Field(default=None, max_length=128)
    #: None for calls refused before a principal was known (401).
    org_id: str | None = Field(default=None, max_length=128)
    agent_id: str | None = Field(default=None, max_length=128)
    tool_name: str = Field(max_length=128)
    latency_ms: float = Field(sa_type=sa.Double)
    success: bool
    error_code: str | None = Field(default=None, max_length=32)
    requested_at: datetime = Field(sa_type=UTCDateTime)
    user_id: str | None = Field(default=None, max_length=128)
    #: The token's public id (``token.id``), never the token or its hash.
    token_id: str | None = Field(default=None, max_length=128)
