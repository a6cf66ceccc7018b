"""The authenticated caller, resolved from a bearer token.

Owner ids come from here and nowhere else: no request schema carries an org or
user id, so a caller can only ever act as itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Principal:
    token_id: str
    org_id: str
    user_id: str
    agent_id: str | None
    permissions: frozenset[str]
    #: The authorization server that issued the JWT this principal came from; None for an ``mb_`` token.
    issuer: str | None = None
    #: The digest (``security.tokens.digest``) of the ``mb_`` secret this principal was verified
    #: from: what each write's transaction checks is still live (``store.fence.writing_as``).
    #: None for a JWT and for the CLI's operator, who have no token row to revoke or rotate.
    secret_digest: str | None = field(default=None, repr=False)

    def allows(self, permission: str) -> bool:
        """``memory:admin`` implies every other memory permission."""
        return permission in self.permissions or "memory:admin" in self.permissions
