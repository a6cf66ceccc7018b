"""``AdminHandlers``: the handwritten implementation of ``generated.admin_interface.MemoryBankAdminApi``.

Every store call is given the caller's org, so another org's token or agent is the same
404 as a missing one, and a token is only ever minted in the caller's own org (the
request has no org to name). The route has already required ``memory:admin``, which
implies every other permission, so an admin may grant any of them and nobody else
mints at all. Secrets leave only in a ``TokenSecret``, the answer of create and rotate.
"""

from __future__ import annotations

from datetime import timedelta
from functools import partial

from starlette.concurrency import run_in_threadpool

from memory_bank.errors import Conflict, FieldError, InvalidInput, NotFound, PermissionDenied, fields_from
from memory_bank.generated import models
from memory_bank.handlers.convert import to_model
from memory_bank.owner_ids import UnroutableAgentId, check_owner_id
from memory_bank.reply import Reply
from memory_bank.security.principal import Principal
from memory_bank.store.agents import AgentIdIsAName, AgentStore, UnusableAgent
from memory_bank.store.columns import utcnow
from memory_bank.store.tables import AgentRow, TokenRow
from memory_bank.store.tokens import TokenStore


def _token(row: TokenRow) -> models.Token:
    return to_model(models.Token, row)


def _secret(minted: tuple[str, TokenRow]) -> models.TokenSecret:
    return models.TokenSecret(token=_token(minted[1]), secret=minted[0])


def _agent(rows: list[AgentRow], agent_id: str) -> models.Agent:
    """The one agent a (de)activation matched in the caller's org; 404 when none did."""
    if not rows:
        raise NotFound.of(f"agent {agent_id!r}")
    return to_model(models.Agent, rows[0])


def _refused_id(field: str, exc: ValueError) -> InvalidInput:
    """An id's refusal as 422 at ``field``, named as the id's pattern would have named it."""
    return InvalidInput(str(exc), [FieldError(field, "pattern", str(exc))])


def _owner_id(field: str, kind: str, value: str | None) -> None:
    """Refuse an id the spec's pattern cannot rule out (``check_owner_id``) as 422 at ``field``.

    The pattern covers the Basic Multilingual Plane; a format character beyond it (a tag
    character such as U+E0001) or an id not in NFKC form is caught here, named as the
    pattern would have named it, before any row is read.
    """
    if value is None:
        return
    try:
        check_owner_id(kind, value)
    except ValueError as exc:
        raise _refused_id(field, exc) from None


class AdminHandlers:
    def __init__(self, tokens: TokenStore, agents: AgentStore) -> None:
        self._tokens = tokens
        self._agents = agents

    async def _may_change(self, principal: Principal) -> None:
        """``permission_denied`` when the caller's token is bound to an agent that is deactivated.

        Deactivation refuses every further write by an agent; minting, rotating or
        revoking tokens and (re)activating agents are writes too. Without this an admin
        token bound to a deactivated agent could reactivate it, or mint itself a token
        for a fresh agent and go on writing.
        """
        if principal.agent_id is None:
            return
        row = await run_in_threadpool(self._agents.find, principal.org_id, principal.agent_id)
        if row is None or not row.active:
            raise PermissionDenied(f"agent {principal.agent_id!r} is deactivated: its tokens may not change tokens or agents")

    async def list_tokens(
        self, principal: Principal, *, include_revoked: bool = False, cursor: str | None = None, limit: int = 20
    ) -> Reply[models.TokenPage]:
        with fields_from("query"):
            rows, next_cursor = await run_in_threadpool(
                partial(self._tokens.page, principal.org_id, revoked=include_revoked, limit=limit, cursor=cursor)
            )
        return Reply(models.TokenPage(items=[_token(row) for row in rows], next_cursor=next_cursor))

    async def create_token(self, principal: Principal, *, body: models.TokenCreate) -> Reply[models.TokenSecret]:
        await self._may_change(principal)
        expires_at = None if body.expires_in_seconds is None else utcnow() + timedelta(seconds=body.expires_in_seconds)
        _owner_id("/body/user_id", "user", body.user_id)
        _owner_id("/body/agent_id", "agent", body.agent_id)
        user_id = body.user_id or principal.user_id
        try:
            minted = await run_in_threadpool(
                self._tokens.create,
                principal.org_id,
                user_id,
                body.agent_id,
                body.permissions,
                name=body.name,
                expires_at=expires_at,
                by=principal,
            )
        except AgentIdIsAName as exc:
            raise Conflict(str(exc), [FieldError("/body/agent_id", "value", str(exc))]) from None
        except UnusableAgent as exc:  # deactivated: the design's "agent inactive", as its writes are answered
            raise PermissionDenied(str(exc), [FieldError("/body/agent_id", "value", str(exc))]) from None
        except UnroutableAgentId as exc:  # a new agent's id: refused as the id's pattern refuses
            raise _refused_id("/body/agent_id", exc) from None
        except ValueError as exc:  # the caller's own org or user id, minted under older id rules
            raise InvalidInput(str(exc)) from None
        return Reply(_secret(minted), 201)

    async def get_token(self, principal: Principal, *, token_id: str) -> Reply[models.Token]:
        row = await run_in_threadpool(self._tokens.find, token_id, principal.org_id)
        if row is None:
            raise NotFound.of(f"token {token_id}")
        return Reply(_token(row))

    async def revoke_token(self, principal: Principal, *, token_id: str) -> Reply[None]:
        await self._may_change(principal)
        if not await run_in_threadpool(self._tokens.revoke, token_id, principal.org_id, principal):
            raise NotFound(f"no live token has the id {token_id}")
        return Reply(None)

    async def rotate_token(self, principal: Principal, *, token_id: str) -> Reply[models.TokenSecret]:
        await self._may_change(principal)
        rotated = await run_in_threadpool(self._tokens.rotate, token_id, principal.org_id, principal)
        if rotated is None:
            raise NotFound(f"no live token has the id {token_id}")
        return Reply(_secret(rotated))

    async def list_agents(self, principal: Principal, *, cursor: str | None = None, limit: int = 20) -> Reply[models.AgentPage]:
        with fields_from("query"):
            rows, next_cursor = await run_in_threadpool(
                partial(self._agents.page, principal.org_id, limit=limit, cursor=cursor)
            )
        return Reply(models.AgentPage(items=[to_model(models.Agent, row) for row in rows], next_cursor=next_cursor))

    async def create_agent(self, principal: Principal, *, body: models.AgentCreate) -> Reply[models.Agent]:
        await self._may_change(principal)
        row = await run_in_threadpool(self._agents.create, principal.org_id, body.name, principal)
        return Reply(to_model(models.Agent, row), 201)

    async def deactivate_agent(self, principal: Principal, *, agent_id: str) -> Reply[models.Agent]:
        _owner_id("/path/agent_id", "agent", agent_id)
        await self._may_change(principal)
        return Reply(_agent(await run_in_threadpool(self._agents.deactivate, agent_id, principal.org_id, principal), agent_id))

    async def reactivate_agent(self, principal: Principal, *, agent_id: str) -> Reply[models.Agent]:
        _owner_id("/path/agent_id", "agent", agent_id)
        await self._may_change(principal)
        return Reply(_agent(await run_in_threadpool(self._agents.reactivate, agent_id, principal.org_id, principal), agent_id))
