"""The authenticated caller, resolved from a bearer token.

Owner ids come from here and nowhere else: no request schema carries an org or
user id, so a caller can only ever act as itself.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Principal:
    token_id: str
    org_id: str
    user_id: str
    agent_id: str | None
    permissions: frozenset[str]

    def allows(self, permission: str) -> bool:
        """``memory:admin`` implies every other memory permission."""
        return permission in self.permissions or "memory:admin" in self.permissions
