"""The service's own routes: the home redirect, ``/health``, ``/ready``, ``/metrics`` and the served spec.

They are outside the spec: they serve load balancers, scrapers and people, not API
clients. ``/openapi.json`` serves the handwritten specs (merged by the generator), not FastAPI's
reconstruction of it, so clients see exactly the contract the code was generated from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from memory_bank.api.problems import PROBLEM_JSON, problem_document, status_of
from memory_bank.errors import BackendUnavailable
from memory_bank.observability.metrics import Metrics
from memory_bank.observability.probes import Readiness


def service_routes(spec: Mapping[str, Any], readiness: Readiness, metrics: Metrics) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/")
    async def home() -> RedirectResponse:
        """A person who opens the service's address lands on the API docs, not on a 404."""
        return RedirectResponse("/docs")

    @router.get("/health")
    async def health() -> dict[str, str]:
        """The process is up; says nothing about its dependencies (that is /ready)."""
        return {"status": "ok"}

    @router.get("/ready")
    async def ready(request: Request) -> JSONResponse:
        """Whether this replica can serve; the 503 is a problem document naming what is down."""
        checks = await readiness.check()
        status = {name: "ok" if ok else "unreachable" for name, ok in checks.items()}
        down = [name for name, ok in checks.items() if not ok]
        if not down:
            return JSONResponse({"status": "ready", "checks": status})
        error = BackendUnavailable(f"not ready: {', '.join(down)} unreachable")
        body = problem_document(error, request_id=getattr(request.state, "request_id", None), instance=request.url.path)
        return JSONResponse(body | {"checks": status}, status_code=status_of(error), media_type=PROBLEM_JSON)

    @router.get("/metrics")
    async def exposition() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @router.get("/openapi.json")
    async def openapi_document() -> JSONResponse:
        return JSONResponse(spec)

    return router
