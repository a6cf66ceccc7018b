"""Org-wide calendar-minute request budgets (DESIGN §6).

Every request of an org in the same wall-clock minute counts against one budget
(``rate_limit_rpm``, or the org's override). With Redis configured the count lives
there, so every replica draws on the same budget: one atomic script per request
increments ``mb:rl:{org}:{epoch_minute}`` and, on the first hit, gives the key a
TTL. Without Redis the count lives in this process (fine for one process, and the
only option that needs nothing running).

When Redis fails (down, or slower than the short socket timeout) the profile
decides: development lets the request through and warns, staging and production
refuse it with ``rate_limit_unavailable`` and a ``Retry-After`` of
``UNAVAILABLE_RETRY_AFTER_SECONDS``; an unmetered production would let one tenant
starve the rest.

The limiter counts its refusals and backend failures into the two series of
``LimiterMetrics`` (``observability.metrics.Metrics`` in the app), a protocol defined
here so that security imports nothing of observability, which sits above it.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Protocol

import redis
from prometheus_client import Counter
from redis.backoff import NoBackoff
from redis.retry import Retry
from starlette.concurrency import run_in_threadpool

from memory_bank.errors import RateLimited, RateLimitUnavailable
from memory_bank.settings import Settings

log = logging.getLogger(__name__)

#: A minute key outlives its minute a little, so clock skew between replicas never
#: finds it already gone while another replica still counts in it.
KEY_TTL_SECONDS = 120

#: The wait a refusal for a failing limiter backend asks for (``Retry-After``). Every request
#: tries Redis afresh (no retries, no circuit breaker: ``redis_client``), so the limiter is back
#: the moment Redis answers again; a Redis restart takes a second or a few, and a client that
#: came back sooner would only spend a worker thread on one more socket timeout.
UNAVAILABLE_RETRY_AFTER_SECONDS = 5

#: INCR and, for the first hit of the minute, EXPIRE: atomic, so a key can never be
#: left without a TTL by a client dying between the two commands.
_INCR_WITH_TTL = """
local count = redis.call('INCR', KEYS[1])
if count == 1 then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
end
return count
"""


class MinuteCounter(Protocol):
    """Counts hits of an org in one calendar minute; ``hit`` returns the count including this one."""

    #: True when ``hit`` does I/O and must run off the event loop.
    blocking: bool

    def hit(self, org_id: str, minute: int) -> int: ...


class LimiterMetrics(Protocol):
    """The series the limiter counts into: refusals for a spent budget, and backend failures by outcome."""

    rate_limited: Counter
    limiter_failures: Counter


class LocalCounter:
    """Per-process counts; thread-safe, and it forgets past minutes as it goes."""

    blocking = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._minute = -1
        self._counts: dict[str, int] = {}

    def hit(self, org_id: str, minute: int) -> int:
        with self._lock:
            # A new minute: the old counts can never matter again. A straggler that read
            # the clock just before the turn counts in the new minute (stricter, never looser).
            if minute > self._minute:
                self._minute, self._counts = minute, {}
            count = self._counts.get(org_id, 0) + 1
            self._counts[org_id] = count
            return count


class RedisCounter:
    blocking = True

    def __init__(self, client: redis.Redis) -> None:
        self._incr = client.register_script(_INCR_WITH_TTL)

    def hit(self, org_id: str, minute: int) -> int:
        return int(self._incr(keys=[f"mb:rl:{org_id}:{minute}"], args=[KEY_TTL_SECONDS]))


def redis_client(settings: Settings) -> redis.Redis | None:
    """The configured Redis, failing fast: short timeouts and no retries.

    redis-py retries with backoff by default; here one slow attempt per request
    is already the most a request should wait for its limiter.
    """
    if not settings.redis_url:
        return None
    return redis.Redis.from_url(
        settings.redis_url,
        socket_timeout=settings.redis_timeout_seconds,
        socket_connect_timeout=settings.redis_timeout_seconds,
        retry=Retry(NoBackoff(), 0),
    )


class RateLimiter:
    def __init__(
        self,
        counter: MinuteCounter,
        metrics: LimiterMetrics,
        *,
        rpm: int,
        overrides: dict[str, int],
        fail_closed: bool,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._counter = counter
        self._metrics = metrics
        self._rpm = rpm
        self._overrides = dict(overrides)
        self._fail_closed = fail_closed
        self._clock = clock
        self._failing = False

    @classmethod
    def from_settings(
        cls, settings: Settings, client: redis.Redis | None, metrics: LimiterMetrics, clock: Callable[[], float] = time.time
    ) -> RateLimiter:
        counter: MinuteCounter = LocalCounter() if client is None else RedisCounter(client)
        return cls(
            counter,
            metrics,
            rpm=settings.rate_limit_rpm,
            overrides=settings.rate_limit_org_overrides,
            fail_closed=settings.protected,
            clock=clock,
        )

    def budget(self, org_id: str) -> int:
        return self._overrides.get(org_id, self._rpm)

    async def admit(self, org_id: str) -> None:
        """Count this request against the org's minute; ``rate_limited`` once the budget is spent."""
        if self._counter.blocking:
            await run_in_threadpool(self._admit, org_id)
        else:
            self._admit(org_id)

    def _admit(self, org_id: str) -> None:
        now = self._clock()
        minute = int(now // 60)
        try:
            count = self._counter.hit(org_id, minute)
        except redis.RedisError as exc:
            self._on_failure(exc)
            return
        self._on_success()
        if count > self.budget(org_id):
            self._metrics.rate_limited.inc()
            retry_after = max(1, math.ceil((minute + 1) * 60 - now))
            raise RateLimited(
                f"this organisation's budget of {self.budget(org_id)} requests per minute is spent",
                retry_after=retry_after,
            )

    def _on_failure(self, exc: redis.RedisError) -> None:
        outcome = "closed" if self._fail_closed else "open"
        self._metrics.limiter_failures.labels(outcome).inc()
        if not self._failing:  # warn on the transition, not on every request of an outage
            self._failing = True
            log.warning("rate limiter backend failing (%s); failing %s", exc, outcome)
        if self._fail_closed:
            raise RateLimitUnavailable(
                "the rate limiter is unavailable; retry shortly", retry_after=UNAVAILABLE_RETRY_AFTER_SECONDS
            )

    def _on_success(self) -> None:
        if self._failing:
            self._failing = False
            log.warning("rate limiter backend recovered")
