"""The import request: the format's records written by an agent of the caller's org.

Every step linear in the body (parse, agent lookup, write) runs in a worker thread:
a large body must not hold the event loop that serves every other request of the
replica.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool

from memory_bank.errors import fields_from
from memory_bank.generated import models
from memory_bank.security.agents import AgentResolver
from memory_bank.security.principal import Principal
from memory_bank.store.memories import MemoryStore
from memory_bank.transfer import agent_ids, attribute, parse_records

#: Lines in one import request (the spec's importMemories says so); the CLI has no such bound.
MAX_IMPORT_LINES = 100_000


async def import_body(store: MemoryStore, agents: AgentResolver, principal: Principal, body: str) -> models.ImportResult:
    """An import request; the lines the format and the store name (``line 3``) are lines of the request body."""
    with fields_from("body"):
        return await _import(store, agents, principal, body)


async def _import(store: MemoryStore, agents: AgentResolver, principal: Principal, body: str) -> models.ImportResult:
    agent = await agents.resolve_agent(principal, None)
    records = await run_in_threadpool(parse_records, body, MAX_IMPORT_LINES)
    registered = await agents.registered(principal.org_id, await run_in_threadpool(agent_ids, records))

    def write() -> tuple[int, int]:
        return store.import_records(principal, attribute(records, registered, agent))

    imported, skipped = await run_in_threadpool(write)
    return models.ImportResult(imported=imported, skipped=skipped)
