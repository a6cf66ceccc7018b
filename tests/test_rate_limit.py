"""Org-wide calendar-minute budgets: in-process, on the shared Redis, and with Redis down.

Redis tests use the server at ``MEMORY_BANK_TEST_REDIS_URL`` (default
``redis://127.0.0.1:6379/0``) with a fresh org id per test, and clean up their keys;
they skip with a reason when it is unreachable, except under ``CI=true`` where that
is a failure. The down case starts a private ``redis-server`` and kills it; a Redis URL
where nothing listens is down too, which the core suite checks without any server.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass

import pytest
import redis
from fastapi.testclient import TestClient

from memory_bank.api.problems import status_of
from memory_bank.app import create_app
from memory_bank.errors import DomainError, ErrorCode
from memory_bank.observability.metrics import Metrics
from memory_bank.security.rate_limit import (
    UNAVAILABLE_RETRY_AFTER_SECONDS,
    LocalCounter,
    RateLimiter,
    RedisCounter,
    redis_client,
)
from memory_bank.settings import Profile, Settings
from memory_bank.store.tokens import TokenStore
from support import backends
from support.clock import pinned
from support.mcp_live import call_tool, rpc_response
from support.requirements import unavailable

MINUTE = 29_000_000  # an arbitrary epoch minute for the fake clock



def make_limiter(counter=None, *, rpm: int = 3, overrides=None, fail_closed=False, at: float = MINUTE * 60 + 45.0):
    """A limiter on a settable fake clock (``now[0]``), 45 s into a minute unless ``at`` says otherwise."""
    metrics, now = Metrics(), [at]
    limiter = RateLimiter(
        counter or LocalCounter(), metrics, rpm=rpm, overrides=overrides or {}, fail_closed=fail_closed, clock=lambda: now[0]
    )
    return limiter, metrics, now


async def refused(limiter: RateLimiter, org: str) -> DomainError:
    with pytest.raises(DomainError) as caught:
        await limiter.admit(org)
    return caught.value


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


# -- in-process ---------------------------------------------------------------------------


async def test_exactly_the_budget_is_admitted_then_429_until_the_next_minute() -> None:
    limiter, metrics, now = make_limiter(rpm=3)
    for _ in range(3):
        await limiter.admit("acme")
    error = await refused(limiter, "acme")
    assert error.code is ErrorCode.rate_limited and status_of(error) == 429
    assert error.retry_after == 15  # 45 s into the minute
    assert sample(metrics, "memory_bank_rate_limit_rejections_total") == 1

    now[0] += 15  # the next calendar minute: a fresh budget
    await limiter.admit("acme")


async def test_orgs_have_their_own_budgets_and_overrides() -> None:
    limiter, _, _ = make_limiter(rpm=1, overrides={"big": 3})
    await limiter.admit("acme")
    await limiter.admit("globex")  # acme's spent budget is not globex's
    for _ in range(3):
        await limiter.admit("big")
    assert (await refused(limiter, "big")).code is ErrorCode.rate_limited
    assert (await refused(limiter, "acme")).code is ErrorCode.rate_limited


class DownCounter:
    """A counter whose backend is down: every hit fails as a refused Redis connection does."""

    blocking = False

    def hit(self, org_id: str, minute: int) -> int:
        raise redis.ConnectionError("Connection refused")


async def test_a_failing_backend_fails_closed_with_a_wait_or_open() -> None:
    closed, metrics, _ = make_limiter(DownCounter(), fail_closed=True)
    error = await refused(closed, "acme")
    assert error.code is ErrorCode.rate_limit_unavailable and status_of(error) == 503
    assert error.retry_after == UNAVAILABLE_RETRY_AFTER_SECONDS
    assert sample(metrics, "memory_bank_rate_limiter_failures_total", outcome="closed") == 1

    opened, _, _ = make_limiter(DownCounter(), fail_closed=False)
    await opened.admit("acme")


def test_the_local_counter_loses_no_hits_across_threads() -> None:
    counter = LocalCounter()
    seen: list[int] = []

    def hammer() -> None:
        seen.extend(counter.hit("acme", MINUTE) for _ in range(500))

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(seen) == list(range(1, 4001))


def test_the_local_counter_forgets_past_minutes() -> None:
    counter = LocalCounter()
    counter.hit("acme", MINUTE)
    counter.hit("globex", MINUTE)
    assert counter.hit("acme", MINUTE + 1) == 1
    assert counter._counts == {"acme": 1}
    assert counter.hit("acme", MINUTE) == 2  # a straggler from the old minute does not reset the new one


# -- through the app ----------------------------------------------------------------------


@pytest.fixture
def serve(settings: Settings) -> Iterator[Callable[..., tuple[TestClient, Callable[[str], dict[str, str]]]]]:
    """``serve(**settings)`` -> (client, headers_for(org)): the real app with these settings."""
    with ExitStack() as running:

        def start(**overrides) -> tuple[TestClient, Callable[[str], dict[str, str]]]:
            app = create_app(settings.model_copy(update=overrides), clock=pinned)
            running.callback(app.state.engine.dispose)
            client = running.enter_context(TestClient(app))
            tokens = TokenStore(app.state.engine)

            def headers_for(org: str) -> dict[str, str]:
                return {"Authorization": f"Bearer {tokens.create(org, 'ann', 'laptop', ['memory:read'])[0]}"}

            return client, headers_for

        yield start


def spend(client: TestClient, headers: dict[str, str], calls: int) -> list[int]:
    return [client.get("/v1/memory", headers=headers).status_code for _ in range(calls)]


def test_the_app_answers_429_problem_with_retry_after(serve) -> None:
    client, headers_for = serve(rate_limit_rpm=3, rate_limit_org_overrides={"big": 5})
    acme, big = headers_for("acme"), headers_for("big")
    assert spend(client, acme, 4) == [200, 200, 200, 429]
    assert spend(client, big, 6) == [200] * 5 + [429]

    response = client.get("/v1/memory", headers=acme)
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "rate_limited"
    assert 1 <= int(response.headers["Retry-After"]) <= 60


def check_limiter_down_everywhere(client: TestClient, headers: dict[str, str]) -> None:
    """With the limiter down in a protected profile every door refuses with ``rate_limit_unavailable``
    and the wait: REST as 503 with ``Retry-After``, a tool call as a tool result whose problem has
    ``retry_after_seconds``, any other MCP request as 503 with ``Retry-After`` and its JSON-RPC error."""
    wait, token = UNAVAILABLE_RETRY_AFTER_SECONDS, headers["Authorization"].removeprefix("Bearer ")
    rest = client.get("/v1/memory", headers=headers)
    assert (rest.status_code, rest.json()["code"], rest.headers["Retry-After"]) == (503, "rate_limit_unavailable", str(wait))

    result = call_tool(client, token, "execute_capability", {"name": "listMemories"})
    problem = json.loads(result["content"][0]["text"])
    assert result["isError"] and (problem["code"], problem["retry_after_seconds"]) == ("rate_limit_unavailable", wait)

    listing = rpc_response(client, "/mcp", token, "tools/list")
    assert (listing.status_code, listing.headers["Retry-After"]) == (503, str(wait))
    data = listing.json()["error"]["data"]
    assert (data["code"], data["retry_after_seconds"]) == ("rate_limit_unavailable", wait)


def test_a_limiter_down_in_production_refuses_every_door_with_a_wait(serve) -> None:
    nowhere = f"redis://127.0.0.1:{backends.free_port()}/0"  # nothing listens there: Redis is down
    client, headers_for = serve(env=Profile.production, redis_url=nowhere, public_url="http://testserver")
    check_limiter_down_everywhere(client, headers_for("acme"))


# -- Redis --------------------------------------------------------------------------------


@pytest.fixture
def shared_redis() -> str:
    """The shared test Redis URL; keys made under ``mb:rl:test-*`` by a test are its own."""
    return backends.redis_server()


@pytest.fixture
def org(shared_redis: str) -> Iterator[str]:
    """A unique org id, its rate-limit keys deleted afterwards (never FLUSHALL a shared server)."""
    org_id = f"test-{uuid.uuid4().hex}"
    yield org_id
    client = redis.Redis.from_url(shared_redis)
    keys = list(client.scan_iter(match=f"mb:rl:{org_id}:*"))
    if keys:
        client.delete(*keys)
    client.close()


@dataclass
class PrivateRedis:
    url: str
    process: subprocess.Popen[bytes]

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)


@pytest.fixture
def private_redis() -> Iterator[PrivateRedis]:
    """A throwaway redis-server on a free port, so a test can kill it; killed afterwards in any case."""
    binary = shutil.which("redis-server")
    if binary is None:
        unavailable("a private Redis server", "redis-server is not installed", "apt-get install redis-server")
    port = backends.free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = PrivateRedis(f"redis://127.0.0.1:{port}/0", process)
    client = redis.Redis.from_url(server.url)
    try:
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        else:
            pytest.fail(f"private redis-server on port {port} did not start")
        yield server
    finally:
        client.close()
        if process.poll() is None:
            server.kill()


@pytest.mark.redis
async def test_redis_budget_is_exact_and_the_key_expires(shared_redis: str, org: str) -> None:
    client = redis_client(Settings(redis_url=shared_redis))
    at = time.time()
    limiter, _, _ = make_limiter(RedisCounter(client), rpm=5, at=at)
    for _ in range(5):
        await limiter.admit(org)
    assert (await refused(limiter, org)).code is ErrorCode.rate_limited
    (key,) = client.scan_iter(match=f"mb:rl:{org}:*")
    assert key.decode() == f"mb:rl:{org}:{int(at // 60)}" and client.get(key) == b"6"
    assert 0 < client.ttl(key) <= 120
    client.close()


@pytest.mark.redis
def test_replicas_share_one_budget_through_redis(serve, shared_redis: str, org: str) -> None:
    one, headers_for = serve(redis_url=shared_redis, rate_limit_rpm=4)
    two, _ = serve(redis_url=shared_redis, rate_limit_rpm=4)
    headers = headers_for(org)
    assert spend(one, headers, 2) + spend(two, headers, 2) + spend(one, headers, 1) + spend(two, headers, 1) == [
        200, 200, 200, 200, 429, 429,
    ]


@pytest.mark.redis
@pytest.mark.parametrize(("profile", "expected"), [(Profile.development, 200), (Profile.production, 503)])
def test_redis_down_fails_open_in_development_and_closed_in_production(
    serve, private_redis: PrivateRedis, profile: Profile, expected: int
) -> None:
    client, headers_for = serve(env=profile, redis_url=private_redis.url, public_url="http://testserver")
    headers = headers_for("acme")
    assert client.get("/v1/memory", headers=headers).status_code == 200  # up: counted in Redis

    private_redis.kill()
    started = time.perf_counter()
    response = client.get("/v1/memory", headers=headers)
    assert time.perf_counter() - started < 2  # one short timeout, no retries
    assert response.status_code == expected
    if expected == 503:
        assert response.json()["code"] == "rate_limit_unavailable"
    outcome = "closed" if profile.value == "production" else "open"
    assert f'memory_bank_rate_limiter_failures_total{{outcome="{outcome}"}} 1.0' in client.get("/metrics").text
    if expected == 503:
        check_limiter_down_everywhere(client, headers)
