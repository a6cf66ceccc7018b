"""The app's Prometheus series, on a registry of its own.

Each ``create_app`` gets a fresh ``CollectorRegistry`` instead of the process-global
one: tests build many apps in one process, and two apps registering the same series
on the global registry would collide. Labels are bounded (operationId, HTTP status,
limiter outcome), never org or user ids, so cardinality stays fixed as tenants grow.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

#: Request latency buckets (seconds): sub-millisecond cache hits up to slow full-text scans.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

#: The ``scope["state"]`` key under which an endpoint that is not an operationId route
#: (``/mcp``) names what it served; the call observer prefers it to the route.
OPERATION_STATE_KEY = "metrics_operation"

#: The ``scope["state"]`` key where the HTTP server, when it refused a request the app was
#: still reading (``api.unparsed``: a body that stalled or broke), leaves ``(status, code)``:
#: what the client got, so the request's one access line and count say that, not what the
#: app tried to answer after it.
REFUSED_STATE_KEY = "refused_by_server"

#: What a request refused before routing (unreadable, over 16 KB, too slow) counts under.
UNPARSED_OPERATION = "(unparsed)"

#: ``/mcp`` traffic; a ``tools/call`` for a listed tool is ``mcp:<tool name>``.
MCP_OPERATION = "mcp"


def name_operation(scope: MutableMapping[str, Any], operation: str) -> None:
    """Count this request under ``operation``; the caller keeps the set of values bounded."""
    scope.setdefault("state", {})[OPERATION_STATE_KEY] = operation


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "memory_bank_requests",
            "HTTP requests served, by operationId (or route path) and status code.",
            ["operation", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "memory_bank_request_duration_seconds",
            "Time from request start to the last response byte, by operation.",
            ["operation"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.tool_calls = Counter(
            "memory_bank_tool_calls",
            "MCP tool calls, by tool (execute_capability:<operationId> for a dispatched one) and "
            "outcome (ok, or the error code the agent got); the /mcp request carrying one counts 200.",
            ["tool", "outcome"],
            registry=self.registry,
        )
        self.rate_limited = Counter(
            "memory_bank_rate_limit_rejections",
            "Requests refused with rate_limited because the org's minute budget was spent.",
            registry=self.registry,
        )
        self.limiter_failures = Counter(
            "memory_bank_rate_limiter_failures",
            "Limiter backend errors, by what the request got: let through (open) or refused (closed).",
            ["outcome"],
            registry=self.registry,
        )
        self.audit_dropped = Counter(
            "memory_bank_audit_events_dropped",
            "Audit events lost because the queue was full or the sink failed, by reason.",
            ["reason"],
            registry=self.registry,
        )
        self.audit_queue_depth = Gauge(
            "memory_bank_audit_queue_depth",
            "Audit events waiting to be written.",
            registry=self.registry,
        )
        # Known label values start at 0, so alerts on rate() see a series before the first failure.
        for outcome in ("open", "closed"):
            self.limiter_failures.labels(outcome)
        for reason in ("queue_full", "sink_failed"):
            self.audit_dropped.labels(reason)

    def observe_request(self, operation: str, status: int, seconds: float) -> None:
        self.requests.labels(operation, str(status)).inc()
        self.latency.labels(operation).observe(seconds)

    def observe_refusal(self, status: int) -> None:
        """A request the HTTP server refused before the app saw it (api.unparsed): no operation to name."""
        self.requests.labels(UNPARSED_OPERATION, str(status)).inc()

    def observe_tool_call(self, tool: str, error_code: str | None) -> None:
        self.tool_calls.labels(tool, error_code or "ok").inc()

    def watch_audit_queue(self, depth: Callable[[], int]) -> None:
        """Read the queue depth at scrape time rather than tracking every put and get."""
        self.audit_queue_depth.set_function(depth)
