"""The composition root: build each part of the service once and join them into one FastAPI app.

Nothing here decides behaviour. The store, the handlers that implement
``generated.*_interface``, the capability registry and the operational parts are
built where they live; here the generated routes get the handlers and the bearer
dependency, and the edge (``api``) its routes, docs, problem handlers and middlewares.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, nullcontext

from fastapi import FastAPI

from memory_bank import __version__
from memory_bank.api.auth import install_write_refusals, make_authorize
from memory_bank.api.docs import install_docs
from memory_bank.api.interfaces import require_implemented
from memory_bank.api.middleware import CallObserver, HeadAsGet, RequestHeadLimit, RequestIdMiddleware, UnexpectedErrorMiddleware
from memory_bank.api.problems import install_problem_handlers
from memory_bank.api.routes import service_routes
from memory_bank.capabilities.execute.dispatch import Executor
from memory_bank.capabilities.registry import CapabilityRegistry
from memory_bank.generated import admin_routes, memory_routes
from memory_bank.generated.admin_interface import MemoryBankAdminApi
from memory_bank.generated.memory_interface import MemoryBankApi
from memory_bank.generated.catalog import CAPABILITIES
from memory_bank.generated.spec import SPEC
from memory_bank.handlers import AdminHandlers, MemoryHandlers
from memory_bank.handlers.capabilities import CapabilityHandlers
from memory_bank.mcp.http import MCP_PATH, McpHttp
from memory_bank.mcp.tools import Toolbox
from memory_bank.observability.audit import attribute_agent
from memory_bank.observability.calls import CallAccounting
from memory_bank.observability.logging import AccessLog, configure_logging, log_start
from memory_bank.observability.wiring import Operations
from memory_bank.security.agents import AgentResolver
from memory_bank.security.oauth import OAuthTokens, audiences
from memory_bank.settings import Settings, get_settings
from memory_bank.store.agents import AgentStore
from memory_bank.store.database import open_database
from memory_bank.store.memories import MemoryStore
from memory_bank.store.search.semantic import embedders
from memory_bank.store.tokens import TokenStore


class AppHandlers(MemoryHandlers, CapabilityHandlers):
    """The whole generated ``MemoryBankApi``: the memory operations and the capability search."""

    def __init__(self, store: MemoryStore, agents: AgentResolver, registry: CapabilityRegistry) -> None:
        MemoryHandlers.__init__(self, store, agents)
        CapabilityHandlers.__init__(self, registry)


def create_app(settings: Settings | None = None, *, clock: Callable[[], float] = time.time, stdio: bool = False) -> FastAPI:
    """The app on ``settings``; ``clock`` is the wall clock of its per-minute budgets (a test pins it).

    ``stdio``: built for ``memory-bank mcp``, which drives the app in process and serves nothing
    over HTTP, so its lifespan starts no ``/mcp`` session manager (``/mcp`` answers
    backend_unavailable, though nothing sends to it) and its start line names no public URL."""
    settings = settings or get_settings()
    configure_logging(settings.env)
    engine = open_database(settings)
    tokens = TokenStore(engine)
    oauth = OAuthTokens(settings, audiences(settings.public_url, MCP_PATH)) if settings.oauth_issuer else None
    operations = Operations.build(settings, engine, clock)
    memory_model, capability_model = embedders(settings)
    registry = CapabilityRegistry(CAPABILITIES, embedder=capability_model)
    agents = AgentStore(engine)
    handlers = AppHandlers(MemoryStore(engine, memory_model, settings.vector_cache_bytes, settings.lexical_cache_bytes), AgentResolver(agents, attribute_agent), registry)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        log_start(settings, stdio=stdio)
        with operations.running():
            async with nullcontext() if stdio else mcp_http.running():
                yield
        engine.dispose()

    app = FastAPI(
        title=SPEC["info"]["title"],
        version=__version__,
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
        # No slash redirects: Starlette builds their Location from the client's Host header
        # (``/v1/memory/`` with ``Host: evil.example`` answered 307 to evil.example) and
        # answers before authentication, outside problem+json. A wrong path is a 404 problem.
        redirect_slashes=False,
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.tokens = tokens
    app.state.oauth = oauth
    app.state.audit = operations.audit
    app.state.metrics = operations.metrics
    app.state.capabilities = registry
    # Innermost first: metrics, the access log and the request id all see the last-resort 500,
    # and the id is chosen before the access log writes it. HEAD is routed as GET below the
    # observers, which see the method it came as, and above the last resort, whose body it drops.
    # An oversized head calls no operation, so it is refused above the call observer, and
    # below the access log, which records the refusal.
    app.add_middleware(UnexpectedErrorMiddleware)
    app.add_middleware(HeadAsGet)
    app.add_middleware(CallObserver, accounting=CallAccounting(operations.metrics, operations.audit))
    app.add_middleware(RequestHeadLimit)
    app.add_middleware(AccessLog)
    app.add_middleware(RequestIdMiddleware)
    install_problem_handlers(app)
    install_write_refusals(app, settings.public_url)
    install_docs(app)
    # MCP calls are dispatched back into this same app, so they meet the REST path.
    executor = Executor(registry, app)
    toolbox = Toolbox(registry, executor, settings.mcp_tools, operations.audit, operations.limiter, operations.metrics)
    app.state.mcp_toolbox = toolbox
    mcp_http = McpHttp(toolbox, tokens, oauth, settings.public_url, allow_loopback=not settings.protected)
    mcp_http.install(app)
    authorize = make_authorize(tokens, operations.limiter, oauth, settings.public_url)
    app.include_router(memory_routes.build_router(require_implemented(handlers, MemoryBankApi), authorize))
    admin = require_implemented(AdminHandlers(tokens, agents), MemoryBankAdminApi)
    app.include_router(admin_routes.build_router(admin, authorize))
    app.include_router(service_routes(SPEC, operations.readiness, operations.metrics))
    return app
