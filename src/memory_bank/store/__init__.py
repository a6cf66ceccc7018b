"""Persistence: SQLModel tables, the ``MemoryStore`` repository and full-text search backends.

``open_database(settings)`` gives an engine with the schema in place; ``MemoryStore``
and ``security.tokens.TokenStore`` are built on it.
"""

from memory_bank.store.database import open_database
from memory_bank.store.filters import MemoryFilter
from memory_bank.store.memories import MemoryStore

__all__ = ["MemoryFilter", "MemoryStore", "open_database"]
