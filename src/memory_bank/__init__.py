"""Memory Bank: durable, searchable memory for AI agents, served over REST and MCP.

Data flows spec -> generated code -> handlers -> store:
``openapi/memory.yaml`` is rendered by ``memory_bank_codegen`` into ``memory_bank.generated``;
``memory_bank.app`` mounts the generated router with the handwritten
``memory_bank.handlers``, which keep their data in ``memory_bank.store``.
"""

__version__ = "0.1.0"
