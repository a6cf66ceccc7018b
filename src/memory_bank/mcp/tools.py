"""The tools an MCP client sees, and what each call runs.

``meta`` (the default) lists two tools, whatever the catalog's size: an agent finds
an operation with ``search_capabilities`` and runs it with ``execute_capability``, so
its context holds two schemas instead of one per operation. ``direct`` lists every
exposed operation as its own tool (for clients that cannot chain tools); ``both``
lists all. Every call, however listed, ends in ``Executor``: the same in-process
REST call.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import mcp_types as types
from jsonschema import Draft202012Validator

from memory_bank.capabilities.execute import Caller, Executor, Outcome, decode_groups, schema_failures
from memory_bank.capabilities.registry import CapabilityRegistry
from memory_bank.problems import validation_error
from memory_bank.security.audit import AuditEvent, AuditLog
from memory_bank.settings import McpToolsMode

SEARCH = "search_capabilities"
EXECUTE = "execute_capability"

#: An argument group is an object; JSON text of one is accepted too (``decode_groups``)
#: but not advertised, since single-type schemas are what every client maps cleanly.
_GROUP = {"type": "object"}

SEARCH_TOOL = types.Tool(
    name=SEARCH,
    title="Find the operations that fit a task",
    description=(
        "Search the Memory Bank's operations (save, search, read, change or forget memories; keypath values; "
        "feedback) by what you want to do, in plain words, e.g. 'search my memories' or 'remember a fact'. "
        "Returns compact cards, best first: name, title, summary, category, the permission it needs, a "
        "relevance score and its required arguments (e.g. body.content), plus `total`, how many operations "
        "your token may use. Only operations your token allows are shown. An empty query lists them all by "
        "category. Set include_schema to get each card's full input schema, then call execute_capability."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["query"],
        "properties": {
            "query": {"type": "string", "maxLength": 2000, "description": "What you want to do; empty lists all."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5, "description": "Cards at most."},
            "category": {"type": "string", "minLength": 1, "maxLength": 64, "description": "e.g. Memory."},
            "include_schema": {"type": "boolean", "default": False, "description": "Add each inputSchema."},
        },
    },
    annotations=types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True),
)

EXECUTE_TOOL = types.Tool(
    name=EXECUTE,
    title="Run an operation found with search_capabilities",
    description=(
        "Run one operation by its `name` from search_capabilities. Arguments are grouped as in the "
        "operation's input schema: `path` (e.g. {\"memory_id\": ...}), `query` (e.g. {\"q\": ...}), "
        "`header` (e.g. {\"Idempotency-Key\": ...}) and `body` (the JSON body). A card's required "
        "arguments say which you need: body.content means {\"body\": {\"content\": ...}}. On success the "
        "result is the operation's JSON; on failure isError is set and `code` is one of unauthorized, "
        "permission_denied, not_found, invalid_params (with `errors`: field, rule, message), "
        "payload_too_large, conflict, rate_limited, backend_unavailable, backend_error."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 64, "description": "The card's name."},
            "path": {**_GROUP, "description": "Path parameters."},
            "query": {**_GROUP, "description": "Query parameters."},
            "header": {**_GROUP, "description": "Header parameters."},
            "body": {**_GROUP, "description": "The JSON request body."},
        },
    },
    annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False),
)


def _direct_tool(capability: Mapping[str, Any]) -> types.Tool:
    """A capability as its own tool, with the catalog's schemas unchanged."""
    hints = capability["annotations"]
    return types.Tool(
        name=capability["name"],
        title=capability["title"],
        description=capability["description"],
        input_schema=dict(capability["inputSchema"]),
        output_schema=dict(capability["outputSchema"]) if capability.get("outputSchema") else None,
        annotations=types.ToolAnnotations(
            read_only_hint=hints["readOnlyHint"],
            destructive_hint=hints["destructiveHint"],
            idempotent_hint=hints["idempotentHint"],
            open_world_hint=hints["openWorldHint"],
        ),
    )


class UnknownTool(LookupError):
    """A ``tools/call`` for a name this mode does not list: a protocol error, not a tool result."""


class Toolbox:
    """The listed tools for a mode, and the dispatch of a call by tool name."""

    def __init__(self, registry: CapabilityRegistry, executor: Executor, mode: McpToolsMode, audit: AuditLog) -> None:
        self._registry = registry
        self._executor = executor
        self._audit = audit
        self._meta = mode in (McpToolsMode.meta, McpToolsMode.both)
        self._direct = mode in (McpToolsMode.direct, McpToolsMode.both)
        self._meta_schemas = {tool.name: tool.input_schema for tool in (SEARCH_TOOL, EXECUTE_TOOL)}
        self._validators = {name: Draft202012Validator(schema) for name, schema in self._meta_schemas.items()}

    def tools_for(self, caller: Caller) -> list[types.Tool]:
        """The meta-tools, then (in direct mode) each operation the caller's token allows."""
        tools = [SEARCH_TOOL, EXECUTE_TOOL] if self._meta else []
        if self._direct:
            tools += [_direct_tool(c) for c in self._registry.allowed(caller.principal.allows)]
        return tools

    async def call(self, name: str, arguments: Mapping[str, Any], caller: Caller) -> Outcome:
        """Run tool ``name`` and audit it (DESIGN §6: one event per tool call, never its arguments).

        The REST call it dispatches is audited too, under its operationId; this event also
        covers calls that fail before dispatch (bad arguments, unknown capability).
        """
        requested_at, start = datetime.now(UTC), time.perf_counter()
        outcome = await self._run(name, arguments, caller)
        code = (outcome.structured or {}).get("code") if outcome.is_error else None
        self._audit.record(
            AuditEvent(
                request_id=caller.request_id,
                org_id=caller.principal.org_id,
                user_id=caller.principal.user_id,
                token_id=caller.principal.token_id,
                agent_id=caller.principal.agent_id,
                tool_name=name,
                latency_ms=(time.perf_counter() - start) * 1000,
                success=not outcome.is_error,
                error_code=code,
                requested_at=requested_at,
            )
        )
        return outcome

    async def _run(self, name: str, arguments: Mapping[str, Any], caller: Caller) -> Outcome:
        """Run tool ``name``; a meta-tool's own arguments are checked like an operation's."""
        if self._meta and name in self._validators:
            arguments = decode_groups(arguments, self._meta_schemas[name])
            failures = schema_failures(self._validators[name], arguments)
            if failures:
                return Outcome.failure(validation_error(failures))
            if name == SEARCH:
                return await self._search(arguments, caller)
            rest = {group: value for group, value in arguments.items() if group != "name"}
            return await self._executor.execute(arguments["name"], rest, caller)
        if self._direct and self._registry.get(name) is not None:
            return await self._executor.execute(name, arguments, caller)
        raise UnknownTool(name)

    async def _search(self, arguments: Mapping[str, Any], caller: Caller) -> Outcome:
        query = {"q": arguments["query"], **{k: v for k, v in arguments.items() if k != "query"}}
        return await self._executor.search(query, caller)
