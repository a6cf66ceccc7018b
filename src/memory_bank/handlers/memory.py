"""``MemoryHandlers``: the handwritten implementation of ``generated.memory_interface.MemoryBankApi``.

Each method turns validated request models into store calls and store rows into
response models; nothing here touches SQL or decides who may see what (the store
does, in its queries). The store is synchronous, so every call runs in a worker
thread to keep the event loop free.

Every write, whatever it writes (a memory, a version, a tombstone, feedback), first
resolves the agent it acts as (``AgentResolver.resolve_agent``): an agent-less token or
a deactivated agent cannot change anything.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import ParamSpec, TypeVar

from starlette.concurrency import run_in_threadpool

from memory_bank.errors import BackendUnavailable, RateLimited, fields_from
from memory_bank.generated import models
from memory_bank.handlers.convert import to_memory, to_model, to_search_hit
from memory_bank.handlers.transfer import import_body
from memory_bank.reply import Reply, TextStream
from memory_bank.security.agents import AgentResolver
from memory_bank.security.principal import Principal
from memory_bank.store.filters import MemoryFilter
from memory_bank.store.memories import MemoryStore
from memory_bank.store.tables import MemoryRow
from memory_bank.transfer import export_lines

P = ParamSpec("P")
T = TypeVar("T")


async def _off_loop(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    return await run_in_threadpool(call, *args, **kwargs)


def _filter(
    tags: list[str] | None, category: str | None, project_id: str | None, keypath_prefix: str | None, include_superseded: bool
) -> MemoryFilter:
    return MemoryFilter(tuple(tags or ()), category, project_id, keypath_prefix, include_superseded)


def _created(row: MemoryRow, created: bool) -> Reply[models.Memory]:
    return Reply(to_memory(row), 201 if created else 200)


#: Exports streaming at once in one process. Each holds a pooled connection for as long as its
#: client reads (``MemoryStore.export_snapshot``); a few stalled readers must not take the pool
#: every other request needs (15 connections on SQLite, 40 on MySQL per replica).
EXPORTS_AT_ONCE = 4
#: Of those, how many one organisation may hold, so that one caller cannot take them all.
EXPORTS_PER_ORG = 2
#: What a refused export is told to wait before trying again.
EXPORT_RETRY_AFTER_SECONDS = 5


class MemoryHandlers:
    def __init__(self, store: MemoryStore, agents: AgentResolver) -> None:
        self._store = store
        self._agents = agents
        self._exports_streaming = 0  # counted on the event loop, so no lock
        self._exports_by_org: Counter[str] = Counter()

    async def post_memory(
        self, principal: Principal, *, body: models.MemoryCreate, idempotency_key: str | None = None
    ) -> Reply[models.Memory]:
        body = body.model_copy(update={"agent_id": await self._agents.resolve_agent(principal, body.agent_id)})
        row, created = await _off_loop(self._store.create, principal, body.model_dump(exclude_none=True), idempotency_key)
        return _created(row, created)

    async def list_memories(
        self,
        principal: Principal,
        *,
        cursor: str | None = None,
        limit: int = 20,
        tags: list[str] | None = None,
        category: str | None = None,
        project_id: str | None = None,
        keypath_prefix: str | None = None,
        include_superseded: bool = False,
    ) -> Reply[models.MemoryPage]:
        where = _filter(tags, category, project_id, keypath_prefix, include_superseded)
        with fields_from("query"):
            rows, next_cursor = await _off_loop(self._store.page, principal, where, limit, cursor)
        return Reply(models.MemoryPage(items=[to_memory(r) for r in rows], next_cursor=next_cursor))

    async def get_memory_search(
        self,
        principal: Principal,
        *,
        q: str | None = None,
        limit: int = 20,
        tags: list[str] | None = None,
        category: str | None = None,
        project_id: str | None = None,
        keypath_prefix: str | None = None,
        include_superseded: bool = False,
        min_score: float = 0,
    ) -> Reply[models.SearchResults]:
        where = _filter(tags, category, project_id, keypath_prefix, include_superseded)
        hits = await _off_loop(self._store.search, principal, where, q, limit, min_score)
        return Reply(models.SearchResults(results=[to_search_hit(row, score) for row, score in hits]))

    async def export_memories(self, principal: Principal) -> Reply[TextStream]:
        if self._exports_streaming >= EXPORTS_AT_ONCE:
            raise BackendUnavailable(
                f"{EXPORTS_AT_ONCE} exports are streaming on this server already; retry shortly",
                retry_after=EXPORT_RETRY_AFTER_SECONDS,
            )
        if self._exports_by_org[principal.org_id] >= EXPORTS_PER_ORG:
            raise RateLimited(
                f"{EXPORTS_PER_ORG} exports of your organisation are streaming already; retry when one has ended",
                retry_after=EXPORT_RETRY_AFTER_SECONDS,
            )
        return Reply(self._export(principal))

    async def _export(self, principal: Principal) -> AsyncIterator[str]:
        """The lines of one snapshot (``MemoryStore.export_snapshot``), held open while they stream
        and closed however the stream ends (a client that hangs up included). Counted from its
        first line on: a stream that never starts holds no connection."""
        self._exports_streaming += 1
        self._exports_by_org[principal.org_id] += 1
        try:
            snapshot = self._store.export_snapshot(principal)
            pages = await _off_loop(snapshot.__enter__)

            async def next_page(after: MemoryRow | None, size: int) -> list[MemoryRow]:
                return await _off_loop(pages, after, size)

            try:
                async for line in export_lines(next_page):
                    yield line
            finally:
                await _off_loop(snapshot.__exit__, None, None, None)
        finally:
            self._exports_streaming -= 1
            self._exports_by_org[principal.org_id] -= 1
            if not self._exports_by_org[principal.org_id]:
                del self._exports_by_org[principal.org_id]

    async def import_memories(self, principal: Principal, *, body: str) -> Reply[models.ImportResult]:
        return Reply(await import_body(self._store, self._agents, principal, body))

    async def put_memory_keypath(
        self, principal: Principal, *, keypath: str, body: models.KeypathValue
    ) -> Reply[models.Memory]:
        body = body.model_copy(update={"agent_id": await self._agents.resolve_agent(principal, body.agent_id)})
        row, created = await _off_loop(self._store.put_keypath, principal, keypath, body.model_dump(exclude_none=True))
        return _created(row, created)

    async def get_memory_keypath(self, principal: Principal, *, keypath: str) -> Reply[models.Memory]:
        return Reply(to_memory(await _off_loop(self._store.get_keypath, principal, keypath)))

    async def get_memory(self, principal: Principal, *, memory_id: str) -> Reply[models.Memory]:
        return Reply(to_memory(await _off_loop(self._store.get, principal, memory_id)))

    async def patch_memory(
        self, principal: Principal, *, memory_id: str, body: models.MemoryPatch
    ) -> Reply[models.Memory]:
        # A new version is attributed to the token's agent; an agent-less token cannot write one.
        await self._agents.resolve_agent(principal, None)
        changes = body.model_dump(exclude_none=True, exclude={"expected_version"})
        row = await _off_loop(self._store.patch, principal, memory_id, changes, body.expected_version)
        return Reply(to_memory(row))

    async def delete_memory(self, principal: Principal, *, memory_id: str) -> Reply[None]:
        await self._agents.resolve_agent(principal, None)
        await _off_loop(self._store.delete, principal, memory_id)
        return Reply(None)

    async def get_memory_history(self, principal: Principal, *, memory_id: str) -> Reply[list[models.Memory]]:
        rows = await _off_loop(self._store.history, principal, memory_id)
        return Reply([to_memory(r) for r in rows])

    async def post_memory_feedback(
        self, principal: Principal, *, memory_id: str, body: models.FeedbackCreate
    ) -> Reply[models.Feedback]:
        await self._agents.resolve_agent(principal, None)
        row = await _off_loop(self._store.add_feedback, principal, memory_id, body.model_dump(exclude_none=True))
        return Reply(to_model(models.Feedback, row), 201)
