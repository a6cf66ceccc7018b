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
from fastapi.responses import JSONResponse

from memory_bank import __version__
from memory_bank.generated.routes import build_router
from memory_bank.generated.spec import SPEC
from memory_bank.handlers import MemoryHandlers
from memory_bank.middleware import RequestIdMiddleware
from memory_bank.problems import install_problem_handlers
from memory_bank.security.authorize import make_authorize
from memory_bank.security.tokens import TokenStore
from memory_bank.settings import Settings, get_settings
from memory_bank.store.database import open_database
from memory_bank.store.memories import MemoryStore


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    engine = open_database(settings)
    tokens = TokenStore(engine)
    handlers = MemoryHandlers(MemoryStore(engine))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        engine.dispose()

    app = FastAPI(
        title=SPEC["info"]["title"],
        version=__version__,
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.tokens = tokens
    app.add_middleware(RequestIdMiddleware)
    install_problem_handlers(app)
    app.include_router(build_router(handlers, make_authorize(tokens)))

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi_document() -> JSONResponse:
        return JSONResponse(SPEC)

    @app.get("/health", include_in_schema=False)
    async def health() -> dict[str, str]:
        """The process is up; says nothing about its dependencies (that is /ready)."""
        return {"status": "ok"}

    return app
