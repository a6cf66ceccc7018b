"""A big import against a live server on SQLite, and what the rest of the replica sees meanwhile.

    .venv/bin/python bench/import_under_load.py [--lines 60000] [--rejected-lines 100000]

Starts ``memory-bank serve`` on a loopback port over a fresh SQLite file, then, twice:

* accepted: imports ``--lines`` records (one org) while a prober GETs ``/health`` every
  20 ms and another org saves memories one after another;
* rejected: posts ``--rejected-lines`` lines whose last one is broken (the whole body is
  parsed, then refused with 422), with the same prober and writer.

Prints, per run: the import's status and seconds, ``/health`` latency (p50, p99, max)
and the other org's writes by status. Every loop stops with the import (at most 300 s).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.backends import free_port  # noqa: E402

from memory_bank.settings import Settings  # noqa: E402
from memory_bank.store.database import open_database  # noqa: E402
from memory_bank.store.tokens import TokenStore  # noqa: E402

SERVE = str(Path(sys.executable).with_name("memory-bank"))
DEADLINE_SECONDS = 300
PROBE_EVERY_SECONDS = 0.02
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


def lines(count: int) -> str:
    """``count`` Memory documents as an export writes them, distinct ids and words."""
    out = []
    for n in range(count):
        moment = (EPOCH + timedelta(milliseconds=n)).isoformat()
        out.append(
            json.dumps(
                {
                    "id": uuid.uuid4().hex[:21],
                    "content": f"memory {n}: item {n} of the plan",
                    "tags": [f"t{n % 10}"],
                    "contexts": [],
                    "scope": "user",
                    "category": "fact",
                    "confidence": 0.6,
                    "version": 1,
                    "created_at": moment,
                    "updated_at": moment,
                }
            )
        )
    return "\n".join(out) + "\n"


def percentile(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def run(url: str, importer: str, writer: str, body: str, label: str) -> None:
    done = threading.Event()
    health: list[float] = []
    writes: Counter[int | str] = Counter()

    def probe() -> None:
        with httpx.Client(base_url=url, timeout=30) as client:
            while not done.is_set():
                started = time.perf_counter()
                client.get("/health")
                health.append((time.perf_counter() - started) * 1000)
                time.sleep(PROBE_EVERY_SECONDS)

    def write() -> None:
        with httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Bearer {writer}"}) as client:
            n = 0
            while not done.is_set():
                try:
                    writes[client.post("/v1/memory", json={"content": f"{label} write {n} {uuid.uuid4().hex}"}).status_code] += 1
                except httpx.HTTPError as exc:
                    writes[type(exc).__name__] += 1
                n += 1

    threads = [threading.Thread(target=probe), threading.Thread(target=write)]
    for thread in threads:
        thread.start()
    started = time.perf_counter()
    try:
        response = httpx.post(
            f"{url}/v1/memory/import", content=body.encode(), headers={"Authorization": f"Bearer {importer}"}, timeout=DEADLINE_SECONDS
        )
        status: int | str = response.status_code
    except httpx.HTTPError as exc:
        status = type(exc).__name__
    seconds = time.perf_counter() - started
    time.sleep(0.2)
    done.set()
    for thread in threads:
        thread.join(30)
    print(f"{label}: {body.count(chr(10))} lines, {len(body.encode()) / 2**20:.1f} MiB -> {status} in {seconds:.2f} s")
    print(
        f"  /health during it: {len(health)} probes, p50 {statistics.median(health):.1f} ms, "
        f"p99 {percentile(health, 0.99):.1f} ms, max {max(health):.1f} ms"
    )
    print(f"  other org's writes: {dict(sorted(writes.items(), key=str))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=60_000)
    parser.add_argument("--rejected-lines", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        database_url = f"sqlite:///{Path(directory) / 'memory-bank.db'}"
        engine = open_database(Settings(database_url=database_url))
        tokens = TokenStore(engine)
        perms = ["memory:read", "memory:write"]
        importer, writer, rejected = (tokens.create(org, "u", "agent", perms)[0] for org in ("importer", "writer", "rejected"))
        engine.dispose()
        port = free_port()
        env = os.environ | {"MEMORY_BANK_DATABASE_URL": database_url, "MEMORY_BANK_RATE_LIMIT_RPM": "1000000"}
        server = subprocess.Popen(
            [SERVE, "serve", "--host", "127.0.0.1", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("the server did not start")
                time.sleep(0.2)
            run(url, importer, writer, lines(args.lines), "accepted")
            run(url, rejected, writer, lines(args.rejected_lines - 1) + "{broken\n", "rejected")
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
