"""The tools an MCP client sees, and what each call runs.

``meta`` (the default) lists two tools, whatever the catalog's size: an agent finds
an operation with ``search_capabilities`` and runs it with ``execute_capability``, so
its context holds two schemas instead of one per operation. ``direct`` lists every
exposed operation as its own tool (for clients that cannot chain tools); ``both``
lists all. Every call, however listed, ends in ``Executor``: the same in-process
REST call.

Every call is charged once to the org's budget: one that reaches a REST route is
charged there (after its permission check); one answered before that (bad
arguments, an unknown name) is charged here, as is every other MCP request
(``metering``). Every call is audited once, here, whatever it ends in: the REST
request it is dispatched as leaves the audit to it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import mcp_types as types

from memory_bank.api.auth import ANY_TOKEN
from memory_bank.api.problems import validation_error
from memory_bank.capabilities.cards import cards_text
from memory_bank.capabilities.execute.dispatch import Call, Executor, Refusal
from memory_bank.capabilities.execute.outcome import Caller, Outcome
from memory_bank.capabilities.execute.validation import ArgumentSchema, decode_groups
from memory_bank.capabilities.registry import CapabilityRegistry
from memory_bank.did_you_mean import closest
from memory_bank.errors import BackendError, DomainError, ErrorCode
from memory_bank.generated import models
from memory_bank.observability.audit import AuditEvent, AuditLog, attributing
from memory_bank.observability.metrics import Metrics
from memory_bank.security.rate_limit import RateLimiter
from memory_bank.settings import McpToolsMode

log = logging.getLogger(__name__)

SEARCH = "search_capabilities"
EXECUTE = "execute_capability"
#: MCP's bound on a tool name; an unknown name, which the caller chose, is audited cut to it.
MAX_TOOL_NAME = 128
#: The metrics label of a call to a tool that is not listed (its name is the caller's, unbounded).
UNKNOWN_TOOL = "(unknown)"

#: An argument group is an object; JSON text of one is accepted too (``decode_groups``)
#: but not advertised, since single-type schemas are what every client maps cleanly.
_GROUP = {"type": "object"}

SEARCH_INPUT: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["query"],
    "properties": {
        "query": {"type": "string", "maxLength": 2000, "description": "What you want to do; empty lists all."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5, "description": "Cards at most."},
        "category": {"type": "string", "minLength": 1, "maxLength": 64},
        "include_schema": {"type": "boolean", "default": False, "description": "Add each inputSchema."},
    },
}


def _search_input(registry: CapabilityRegistry) -> dict[str, Any]:
    """``SEARCH_INPUT`` with ``category`` naming the catalog's categories, which are not its
    families: a filter by "Tokens" (a family of the Admin category) matched nothing."""
    categories = list(dict.fromkeys(str(c["policy"]["category"]) for c in registry))
    category = {**SEARCH_INPUT["properties"]["category"], "description": f"One of {', '.join(categories)}."}
    return {**SEARCH_INPUT, "properties": {**SEARCH_INPUT["properties"], "category": category}}


def search_tool(registry: CapabilityRegistry) -> types.Tool:
    """``search_capabilities``, its description naming the API and the families the catalog holds."""
    return types.Tool(
        name=SEARCH,
        title="Find the operations that fit a task",
        description=(
            f"Search the {registry.api_title()}'s operations ({'; '.join(registry.families())}) by what you "
            "want to do, in plain words, e.g. 'search my memories' or 'remember a fact'. Returns compact "
            "cards, best first: name, title, summary, category, the permission it needs, a relevance score "
            "and its required arguments (e.g. body.content), plus `total`, how many operations your token "
            f"may use, and `confidence`, how sure the first card is: below {registry.confidence.threshold} it is "
            "often a wrong guess, so compare several cards before choosing. Only operations your token allows are shown; when the best fit is one "
            "it does not, or one offered over HTTP only, `withheld` names it, why and its route. An empty query lists them all by "
            "category. Set include_schema to get each card's full input schema, then call execute_capability."
        ),
        input_schema=_search_input(registry),
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
        "result is the operation's JSON; on failure isError is set and the text is a JSON problem whose "
        "`code` is one of unauthorized, permission_denied, not_found, invalid_params (with `errors`: field, "
        "rule, message), payload_too_large, conflict, rate_limited and rate_limit_unavailable (with "
        "`retry_after_seconds`), backend_unavailable, backend_error."
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


def brief(outcome: Outcome, confident: float) -> Outcome:
    """A search result with its text block as one line per card (``cards_text``) instead of a
    second copy of the structured content; a failure is left as it is."""
    if outcome.is_error or outcome.structured is None:
        return outcome
    return replace(outcome, text=cards_text(models.CapabilitySearchResult.model_validate(outcome.structured), confident))


#: What an unknown tool's error says to do when nothing more specific fits.
LIST_TOOLS = "tools/list names the tools this token may call"


class UnknownTool(LookupError):
    """A ``tools/call`` for a name this mode does not list: a protocol error, not a tool result.

    ``advice`` is what to call instead (``Toolbox.advice``), for the error's message.
    """

    def __init__(self, name: str, advice: str = LIST_TOOLS) -> None:
        super().__init__(name)
        self.advice = advice


META_INSTRUCTIONS = (
    "Memory Bank keeps what you learn across sessions. Find an operation with search_capabilities "
    "(e.g. 'save a memory', 'search my memories'), then run it with execute_capability."
)
DIRECT_INSTRUCTIONS = (
    "Memory Bank keeps what you learn across sessions. Each of its operations is a tool of its own "
    "(postMemory saves a memory, getMemorySearch searches them); call the one you need."
)
BOTH_INSTRUCTIONS = (
    "Memory Bank keeps what you learn across sessions. Each of its operations is a tool of its own "
    "(postMemory saves a memory, getMemorySearch searches them); call the one you need, or find one "
    "with search_capabilities and run it with execute_capability."
)


class Toolbox:
    """The listed tools for a mode, and the dispatch of a call by tool name."""

    def __init__(
        self,
        registry: CapabilityRegistry,
        executor: Executor,
        mode: McpToolsMode,
        audit: AuditLog,
        limiter: RateLimiter,
        metrics: Metrics,
    ) -> None:
        self._registry = registry
        self._executor = executor
        self._audit = audit
        self._metrics = metrics
        self._limiter = limiter
        self._meta = mode in (McpToolsMode.meta, McpToolsMode.both)
        self._direct = mode in (McpToolsMode.direct, McpToolsMode.both)
        self._meta_tools = [search_tool(registry), EXECUTE_TOOL]
        self._meta_schemas = {tool.name: tool.input_schema for tool in self._meta_tools}
        self._checks = {name: ArgumentSchema(schema) for name, schema in self._meta_schemas.items()}

    @property
    def instructions(self) -> str:
        """What the handshake tells an agent to do first: the tools this mode lists, no others."""
        if self._meta and self._direct:
            return BOTH_INSTRUCTIONS
        return META_INSTRUCTIONS if self._meta else DIRECT_INSTRUCTIONS

    def tools_for(self, caller: Caller) -> list[types.Tool]:
        """The meta-tools, then (in direct mode) each operation the caller's token allows."""
        tools = list(self._meta_tools) if self._meta else []
        if self._direct:
            tools += [_direct_tool(c) for c in self._registry.allowed(caller.principal.allows)]
        return tools

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        """The input schema of tool ``name`` in this mode, whoever asks; None for a name it does not list.

        The SDK checks a 2026-07-28 call's ``Mcp-Param-*`` headers against it; without
        it the SDK runs a whole ``tools/list`` per call to find it, which the metering
        middleware would also charge.
        """
        if self._meta and name in self._meta_schemas:
            return self._meta_schemas[name]
        capability = self._registry.get(name) if self._direct else None
        return capability["inputSchema"] if capability is not None else None

    def permission_of(self, name: str, arguments: Mapping[str, Any]) -> str | None:
        """The permission tool call ``name`` needs: its operation's, for ``execute_capability`` the named
        one's; None when any token may make it or it names no operation (refused later, as it is)."""
        if self._meta and name == EXECUTE:
            named = arguments.get("name")
            capability = self._registry.get(named) if isinstance(named, str) else None
        else:
            capability = self._registry.get(name) if self._direct else None
        permission = capability["policy"]["permission"] if capability is not None else None
        return None if permission == ANY_TOKEN else permission

    async def admit(self, caller: Caller) -> None:
        """Charge one request of ``caller`` to its org; ``DomainError`` (``rate_limited``...) refuses it."""
        await self._limiter.admit(caller.principal.org_id)

    async def call(self, name: str, arguments: Mapping[str, Any], caller: Caller) -> Outcome:
        """Run tool ``name`` and audit it (DESIGN §6: one event per tool call, never its arguments).

        The one event covers every ending: a dispatched call (which the REST layer does
        not audit again; the agent a write resolved to is taken from it), a call that
        fails before dispatch (bad arguments, an unknown capability or tool) and one
        that fails unexpectedly, which reaches the agent as ``backend_error``.
        """
        requested_at, start = datetime.now(UTC), time.perf_counter()
        audited = self._audited_name(name, arguments)
        with attributing() as attribution:
            try:
                outcome = await self._run(name, arguments, caller)
            except UnknownTool:
                self._record(audited, caller, attribution.agent_id, requested_at, start, ErrorCode.not_found)
                self._metrics.observe_tool_call(UNKNOWN_TOOL, ErrorCode.not_found)  # any name: not a label
                raise
            except Exception:
                log.exception("tool %s failed unexpectedly", name)
                outcome = Outcome.failure(BackendError("unexpected server error"))
        self._record(audited, caller, attribution.agent_id, requested_at, start, outcome.error_code)
        self._metrics.observe_tool_call(audited, outcome.error_code)
        return outcome

    def _audited_name(self, name: str, arguments: Mapping[str, Any]) -> str:
        """The tool, and for ``execute_capability`` the operation it ran (``execute_capability:postMemory``):
        the one event of the call must say which write it was. A name that is no capability is not echoed."""
        capability = arguments.get("name") if name == EXECUTE else None
        if isinstance(capability, str) and self._registry.get(capability) is not None:
            return f"{EXECUTE}:{capability}"
        return name

    def _record(
        self, name: str, caller: Caller, agent_id: str | None, requested_at: datetime, start: float, error_code: str | None
    ) -> None:
        self._audit.record(
            AuditEvent(
                request_id=caller.request_id,
                org_id=caller.principal.org_id,
                user_id=caller.principal.user_id,
                token_id=caller.principal.token_id,
                agent_id=agent_id or caller.principal.agent_id,
                tool_name=name[:MAX_TOOL_NAME],
                latency_ms=(time.perf_counter() - start) * 1000,
                success=error_code is None,
                error_code=error_code,
                requested_at=requested_at,
            )
        )

    async def _run(self, name: str, arguments: Mapping[str, Any], caller: Caller) -> Outcome:
        """Dispatch the call into REST (which charges it), or charge it and answer here."""
        try:
            step = self._prepare(name, arguments, caller)
        except UnknownTool:
            # Refused whatever the budget says; what matters is that it spends the budget.
            with contextlib.suppress(DomainError):
                await self.admit(caller)
            raise
        if isinstance(step, Call):
            outcome = await self._executor.run(step, caller)
            return brief(outcome, self._registry.confidence.threshold) if name == SEARCH else outcome
        if step.metered:
            try:
                await self.admit(caller)
            except DomainError as refused:
                return Outcome.failure(refused)
        return Outcome.failure(step.error)

    def _prepare(self, name: str, arguments: Mapping[str, Any], caller: Caller) -> Call | Refusal:
        """The REST request tool ``name`` becomes; a meta-tool's own arguments are checked like an operation's.

        ``execute_capability`` checks only ``name`` itself: the rest is checked against
        the named operation's schema, which is stricter than the generic groups and
        knows where a misplaced argument belongs.
        """
        if self._meta and name in self._checks:
            arguments = decode_groups(arguments, self._meta_schemas[name])
            failures = self._checks[name].failures(arguments)
            if name == SEARCH:
                return Refusal(validation_error(failures)) if failures else self._search(arguments)
            if any(f.field == "/name" for f in failures):
                return Refusal(validation_error(failures))
            rest = {group: value for group, value in arguments.items() if group != "name"}
            return self._executor.prepare(arguments["name"], rest, caller)
        if self._direct and self._registry.get(name) is not None:
            return self._executor.prepare(name, arguments, caller)
        raise UnknownTool(name, self._advice(name))

    def _advice(self, name: str) -> str:
        """What to call instead of unknown tool ``name``. An operation's name (``postMemory``, or
        ``postmemory`` for it) is, where only the meta-tools are listed, told the ``execute_capability``
        call that runs it; where operations are tools (direct mode), its misspelling is told the tool."""
        operation = closest(name, [c["name"] for c in self._registry])
        if operation is None:
            return LIST_TOOLS
        if self._direct:  # not ``name`` itself, which would have been run as its tool
            return f"did you mean {operation}?"
        named = f"{name} is an operation" if operation == name else f"did you mean the operation {operation}? It is one"
        return f'{named}, not a tool: run it with {EXECUTE} {{"name": "{operation}", ...}} (its arguments as path, query, header, body)'

    def _search(self, arguments: Mapping[str, Any]) -> Call:
        query = {"q": arguments["query"], **{k: v for k, v in arguments.items() if k != "query"}}
        return self._executor.search(query)
