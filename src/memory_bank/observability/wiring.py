"""Builds the operational parts of one app: metrics, rate limiter, audit log, probes.

``create_app`` calls ``Operations.build``, hands the parts to the HTTP edge and
enters ``running()`` in its lifespan, so the app factory stays a list of parts
rather than their assembly. Everything is per app (own metrics registry, own Redis
client, own audit writer): tests build many apps in one process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import redis
from sqlalchemy.engine import Engine

from memory_bank.observability.audit import AuditLog
from memory_bank.observability.metrics import Metrics
from memory_bank.observability.probes import Readiness
from memory_bank.security.rate_limit import RateLimiter, redis_client
from memory_bank.settings import Settings
from memory_bank.store.audit import TableSink


@dataclass(frozen=True)
class Operations:
    metrics: Metrics
    limiter: RateLimiter
    audit: AuditLog
    readiness: Readiness
    redis: redis.Redis | None

    @classmethod
    def build(cls, settings: Settings, engine: Engine, clock: Callable[[], float] = time.time) -> Operations:
        """``clock``: the wall clock whose calendar minutes the rate limiter counts in."""
        metrics = Metrics()
        client = redis_client(settings)
        return cls(
            metrics=metrics,
            limiter=RateLimiter.from_settings(settings, client, metrics, clock),
            audit=AuditLog.from_settings(settings, TableSink(engine), metrics),
            readiness=Readiness(engine, client),
            redis=client,
        )

    @contextmanager
    def running(self) -> Iterator[None]:
        """For the app's lifespan: the audit writer runs inside; on exit it drains, then Redis closes."""
        with self.audit.running():
            yield
        if self.redis is not None:
            self.redis.close()
