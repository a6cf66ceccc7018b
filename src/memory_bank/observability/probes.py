"""Readiness: can this replica serve, i.e. are its database and (when configured) Redis reachable?

``/health`` only says the process is up; a load balancer that routes by ``/ready``
(``api.routes``) stops sending traffic to a replica that has lost its dependencies
instead of letting it answer 503 to every call.
"""

from __future__ import annotations

import logging

import redis
import sqlalchemy as sa
from sqlalchemy.engine import Engine

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
