"""Persistence: every table, the SQL repositories and full-text search backends.

``open_database(settings)`` gives an engine with the schema in place; ``MemoryStore``,
``store.tokens.TokenStore``, ``store.agents.AgentStore`` and the audit trail's
``store.audit.TableSink`` are built on it.
"""

from memory_bank.store.database import open_database
from memory_bank.store.filters import MemoryFilter
from memory_bank.store.memories import MemoryStore

__all__ = ["MemoryFilter", "MemoryStore", "open_database"]
