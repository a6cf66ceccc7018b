"""``CapabilityHandlers``: ``GET /v1/capabilities``, the registry search for REST clients.

It is the same search the ``search_capabilities`` MCP tool runs (that tool dispatches
here), so people, REST clients and agents see one ranking and one permission filter.
"""

from __future__ import annotations

from memory_bank.capabilities.registry import CapabilityRegistry
from memory_bank.generated import models
from memory_bank.reply import Reply
from memory_bank.security.principal import Principal


class CapabilityHandlers:
    def __init__(self, registry: CapabilityRegistry) -> None:
        self._registry = registry

    async def search_capabilities(
        self,
        principal: Principal,
        *,
        q: str | None = None,
        limit: int = 5,
        category: str | None = None,
        include_schema: bool = False,
    ) -> Reply[models.CapabilitySearchResult]:
        result = self._registry.search(
            q or "", allows=principal.allows, limit=limit, category=category, include_schema=include_schema
        )
        return Reply(result)
