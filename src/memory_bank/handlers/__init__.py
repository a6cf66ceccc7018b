"""Handwritten implementations of the generated interfaces."""

from memory_bank.handlers.memory import MemoryHandlers

__all__ = ["MemoryHandlers"]
