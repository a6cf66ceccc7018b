"""Readiness: can this replica serve, i.e. are its database and (when configured) Redis reachable?

``/health`` only says the process is up; a load balancer that routes by ``/ready``
(``api.routes``) stops sending traffic to a replica that has lost its dependencies
instead of letting it answer 503 to every call.
"""

from __future__ import annotations

import asyncio
import logging

import redis
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.concurrency import run_in_threadpool

log = logging.getLogger(__name__)

#: How long ``/ready`` waits for the database before calling it unreachable: a load balancer's
#: probe gives up within seconds, and a database that stops answering is only bounded by the
#: driver's timeouts (``store.database.make_engine``), which a request may meet several times.
READY_DEADLINE_SECONDS = 3.0


class Readiness:
    def __init__(self, engine: Engine, redis_client: redis.Redis | None, deadline_seconds: float = READY_DEADLINE_SECONDS) -> None:
        self._engine = engine
        self._redis = redis_client
        self._deadline = deadline_seconds

    async def check(self) -> dict[str, bool]:
        """Each dependency's reachability; Redis is only checked when configured (its client
        has its own short timeouts)."""
        try:
            database = await asyncio.wait_for(run_in_threadpool(self._database_reachable), self._deadline)
        except TimeoutError:
            log.warning("readiness: the database did not answer within %s s", self._deadline)
            database = False
        checks = {"database": database}
        if self._redis is not None:
            checks["redis"] = await run_in_threadpool(self._redis_reachable, self._redis)
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
