"""Three ``memory-bank serve`` processes on one MariaDB database and one Redis (DESIGN §7).

Replicas share nothing but those two, so what one replica promises must hold on
all of them: an org's minute budget is one budget, an idempotency key makes one
memory wherever its repeats land, and a write a replica acknowledged survives that
replica being killed. Each test gets a fresh database and fresh org ids (whose
Redis keys it deletes afterwards); the replicas race each other through the
start-up migrations too.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import redis

from memory_bank.store.database import make_engine
from memory_bank.store.tokens import TokenStore
from support import backends

pytestmark = [pytest.mark.mysql, pytest.mark.redis]

REPLICAS = 3
#: The budget of the org whose limit is tested; every other org may send 100k a minute.
BUDGET = 30
START_TIMEOUT_SECONDS = 60.0
SERVE = str(Path(sys.executable).with_name("memory-bank"))


def wait_for_the_next_minute_if_under(seconds: float) -> None:
    """Budgets are per calendar minute: a burst that straddles two minutes gets two budgets."""
    left = 60 - time.time() % 60
    if left < seconds:
        time.sleep(left + 0.1)


@dataclass
class Replica:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def ready(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"replica {self.url} exited at start:\n{self.log.read_text()[-3000:]}")
        try:
            return httpx.get(f"{self.url}/ready", timeout=1).status_code == 200
        except httpx.TransportError:
            return False


@dataclass
class Fleet:
    replicas: list[Replica]
    database_url: str
    orgs: list[str] = field(default_factory=list)

    def org(self) -> str:
        """A fresh org id; its rate-limit keys are deleted when the fleet stops."""
        org = f"replicas-{uuid.uuid4().hex}"
        self.orgs.append(org)
        return org

    def token(self, org: str) -> str:
        engine = make_engine(self.database_url)
        try:
            return TokenStore(engine).create(org, "ann", "replica-test", ["memory:read", "memory:write"])[0]
        finally:
            engine.dispose()

    def clients(self, token: str) -> list[httpx.Client]:
        """One client per replica; close them (``with``) when done."""
        headers = {"Authorization": f"Bearer {token}"}
        return [httpx.Client(base_url=r.url, headers=headers, timeout=30) for r in self.replicas]


def start(env: dict[str, str], logs: Path) -> list[Replica]:
    replicas = []
    for n in range(REPLICAS):
        port = backends.free_port()
        log = logs / f"replica-{n}.log"
        process = subprocess.Popen(
            [SERVE, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log.open("wb"),
        )
        replicas.append(Replica(f"http://127.0.0.1:{port}", process, log))
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not all(r.ready() for r in replicas):
        if time.monotonic() > deadline:
            raise RuntimeError("replicas did not become ready in time")
        time.sleep(0.2)
    return replicas


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    redis_url = backends.redis_server()
    with backends.fresh_database(backends.mysql_server()) as database_url:
        fleet = Fleet([], database_url)
        budgeted = fleet.org()
        env = os.environ | {
            "MEMORY_BANK_ENV": "staging",
            "MEMORY_BANK_DATABASE_URL": database_url,
            "MEMORY_BANK_REDIS_URL": redis_url,
            "MEMORY_BANK_RATE_LIMIT_RPM": "100000",
            "MEMORY_BANK_RATE_LIMIT_ORG_OVERRIDES": json.dumps({budgeted: BUDGET}),
        }
        try:
            fleet.replicas = start(env, tmp_path)
            yield fleet
        finally:
            for replica in fleet.replicas:
                replica.process.kill()
                replica.process.wait(timeout=10)
            client = redis.Redis.from_url(redis_url)
            for org in fleet.orgs:
                keys = list(client.scan_iter(match=f"mb:rl:{org}:*"))
                if keys:
                    client.delete(*keys)
            client.close()


def test_the_org_budget_holds_exactly_across_replicas(fleet: Fleet) -> None:
    org = fleet.orgs[0]  # the one with the BUDGET override
    token = fleet.token(org)
    clients = fleet.clients(token)
    spread = list(itertools.islice(itertools.cycle(clients), BUDGET + 15))
    wait_for_the_next_minute_if_under(10)
    minute = int(time.time() // 60)
    with ThreadPoolExecutor(12) as pool:
        statuses = list(pool.map(lambda c: c.get("/v1/memory/search", params={"q": "budget"}).status_code, spread))
    assert int(time.time() // 60) == minute, "the burst straddled a minute boundary"
    assert sorted(statuses) == [200] * BUDGET + [429] * 15
    # Wherever the next request lands, the budget is spent.
    assert [c.get("/v1/memory").status_code for c in clients] == [429] * REPLICAS
    for client in clients:
        client.close()


def test_one_idempotency_key_makes_one_memory_across_replicas(fleet: Fleet) -> None:
    clients = fleet.clients(fleet.token(fleet.org()))
    spread = list(itertools.islice(itertools.cycle(clients), 50))
    body, headers = {"content": "deploys go through the blue pipeline"}, {"Idempotency-Key": "deploy-note-1"}
    with ThreadPoolExecutor(50) as pool:
        responses = list(pool.map(lambda c: c.post("/v1/memory", json=body, headers=headers), spread))
    assert sorted(r.status_code for r in responses) == [200] * 49 + [201], [r.text for r in responses if r.status_code >= 300]
    assert len({r.json()["id"] for r in responses}) == 1
    assert len(clients[0].get("/v1/memory").json()["items"]) == 1
    for client in clients:
        client.close()


def test_a_killed_replica_loses_no_acknowledged_write(fleet: Fleet) -> None:
    clients = fleet.clients(fleet.token(fleet.org()))
    victim, survivor = fleet.replicas[0], clients[1]
    acknowledged: dict[str, str] = {}
    acknowledged_by_victim: list[str] = []
    refused_by_victim: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()
    counter = itertools.count()

    def writer() -> None:
        while not stop.is_set():
            n = next(counter)
            client = clients[n % REPLICAS]
            content = f"write {n} under load"
            try:
                response = client.post("/v1/memory", json={"content": content})
            except httpx.TransportError:
                with lock:
                    refused_by_victim.append(content)
                continue
            if response.status_code in (200, 201):
                with lock:
                    acknowledged[response.json()["id"]] = content
                    if client is clients[0]:
                        acknowledged_by_victim.append(content)

    with ThreadPoolExecutor(8) as pool:
        workers = [pool.submit(writer) for _ in range(8)]
        time.sleep(2.0)
        os.kill(victim.process.pid, signal.SIGKILL)
        time.sleep(2.0)
        stop.set()
        for worker in workers:
            worker.result()

    assert len(acknowledged_by_victim) > 10 and refused_by_victim, "the kill must land in the middle of the load"
    lost = []
    for memory_id, content in acknowledged.items():
        response = survivor.get(f"/v1/memory/{memory_id}")
        if response.status_code != 200 or response.json()["content"] != content:
            lost.append((memory_id, response.status_code))
    assert lost == [], f"{len(lost)} of {len(acknowledged)} acknowledged writes are missing"
    for client in clients:
        client.close()
