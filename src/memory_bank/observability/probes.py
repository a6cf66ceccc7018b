"""``/ready``: can this replica serve, i.e. are its database and (when configured) Redis reachable?

``/health`` only says the process is up; a load balancer that routes by ``/ready``
stops sending traffic to a replica that has lost its dependencies instead of letting
it answer 503 to every call. The 503 is a problem document naming what is down.
"""

from __future__ import annotations

import logging

import redis
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from memory_bank.api.problems import PROBLEM_JSON, problem_document, status_of
from memory_bank.errors import BackendUnavailable

log = logging.getLogger(__name__)


class Readiness:
    def __init__(self, engine: Engine, redis_client: redis.Redis | None) -> None:
        self._engine = engine
        self._redis = redis_client

    def check(self) -> dict[str, bool]:
        """Each dependency's reachability; Redis is only checked when configured."""
        checks = {"database": self._database_reachable()}
        if self._redis is not None:
            checks["redis"] = self._redis_reachable(self._redis)
        return checks

    def _database_reachable(self) -> bool:
        try:
            with self._engine.connect() as connection:
                connection.execute(sa.text("SELECT 1"))
        except sa.exc.SQLAlchemyError as exc:
            log.warning("readiness: database unreachable: %s", exc)
            return False
        return True

    @staticmethod
    def _redis_reachable(client: redis.Redis) -> bool:
        try:
            client.ping()
        except redis.RedisError as exc:
            log.warning("readiness: redis unreachable: %s", exc)
            return False
        return True

    async def endpoint(self, request: Request) -> JSONResponse:
        checks = await run_in_threadpool(self.check)
        status = {name: "ok" if ok else "unreachable" for name, ok in checks.items()}
        down = [name for name, ok in checks.items() if not ok]
        if not down:
            return JSONResponse({"status": "ready", "checks": status})
        error = BackendUnavailable(f"not ready: {', '.join(down)} unreachable")
        body = problem_document(error, request_id=getattr(request.state, "request_id", None), instance=request.url.path)
        return JSONResponse(body | {"checks": status}, status_code=status_of(error), media_type=PROBLEM_JSON)
