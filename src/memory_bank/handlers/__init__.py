"""Handwritten implementations of the generated interfaces."""

from memory_bank.handlers.admin import AdminHandlers
from memory_bank.handlers.memory import MemoryHandlers

__all__ = ["AdminHandlers", "MemoryHandlers"]
