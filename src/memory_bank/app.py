"""The FastAPI app factory: generated routes + handwritten handlers + the handwritten spec.

``create_app`` is the one place where the layers meet: it opens the store, builds the
handlers that implement ``generated.interface``, and mounts ``generated.routes`` with
the authorization dependency. ``/openapi.json`` serves the handwritten spec itself,
not FastAPI's reconstruction of it, so clients see exactly the contract the code was
generated from.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.responses import JSONResponse, RedirectResponse

from memory_bank import __version__
from memory_bank.capabilities.execute.dispatch import Executor
from memory_bank.capabilities.registry import CapabilityRegistry
from memory_bank.docs import install_docs
from memory_bank.generated.catalog import CAPABILITIES
from memory_bank.generated.routes import build_router
from memory_bank.generated.spec import SPEC
from memory_bank.handlers import MemoryHandlers
from memory_bank.handlers.capabilities import CapabilityHandlers
from memory_bank.logs import AccessLog, configure_logging, log_start
from memory_bank.mcp.http import McpHttp
from memory_bank.mcp.tools import Toolbox
from memory_bank.middleware import RequestIdMiddleware, UnexpectedErrorMiddleware
from memory_bank.observability.wiring import Operations
from memory_bank.problems import install_problem_handlers
from memory_bank.security.agents import AgentResolver, AgentStore
from memory_bank.security.authorize import make_authorize
from memory_bank.security.tokens import TokenStore
from memory_bank.settings import Settings, get_settings
from memory_bank.store.database import open_database
from memory_bank.store.embeddings import embedder_for
from memory_bank.store.memories import MemoryStore


class AppHandlers(MemoryHandlers, CapabilityHandlers):
    """The whole generated ``MemoryBankApi``: the memory operations and the capability search."""

    def __init__(self, store: MemoryStore, agents: AgentResolver, registry: CapabilityRegistry) -> None:
        MemoryHandlers.__init__(self, store, agents)
        CapabilityHandlers.__init__(self, registry)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    configure_logging(settings.env)
    engine = open_database(settings)
    tokens = TokenStore(engine)
    operations = Operations.build(settings, engine)
    registry = CapabilityRegistry(CAPABILITIES)
    handlers = AppHandlers(MemoryStore(engine, embedder_for(settings)), AgentResolver(AgentStore(engine)), registry)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        log_start(settings)
        with operations.running():
            async with mcp_http.running():
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
    app.add_middleware(UnexpectedErrorMiddleware)  # innermost: metrics, access log and request id see its 500
    operations.install(app)
    app.add_middleware(AccessLog)  # inside RequestIdMiddleware: the id is chosen first
    app.add_middleware(RequestIdMiddleware)
    install_docs(app)
    install_problem_handlers(app)
    # MCP calls are dispatched back into this same app, so they meet the REST path.
    toolbox = Toolbox(registry, Executor(registry, app), settings.mcp_tools, operations.audit, operations.limiter)
    app.state.mcp_toolbox = toolbox
    mcp_http = McpHttp(toolbox, tokens, settings.public_url, allow_loopback=not settings.protected)
    mcp_http.install(app)
    app.include_router(build_router(handlers, make_authorize(tokens, operations.limiter)))

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi_document() -> JSONResponse:
        return JSONResponse(SPEC)

    @app.get("/", include_in_schema=False)
    async def home() -> RedirectResponse:
        """A person who opens the service's address lands on the API docs, not on a 404."""
        return RedirectResponse("/docs")

    @app.get("/health", include_in_schema=False)
    async def health() -> dict[str, str]:
        """The process is up; says nothing about its dependencies (that is /ready)."""
        return {"status": "ok"}

    return app
