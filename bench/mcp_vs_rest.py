"""What MCP costs over REST: execute_capability(getMemorySearch) vs GET /v1/memory/search.

    .venv/bin/python bench/mcp_vs_rest.py [--rounds N] [--memories M] [--json]

One run, one server (``memory-bank serve`` in a subprocess, fresh SQLite, rate limit
lifted), one token, M memories. Each round makes the same search both ways over
keep-alive connections, MCP first then REST, so both see the same server state; the
figures are per-call wall time at the client, median and p95 in ms. The MCP call is
the REST call plus the MCP layer (JSON-RPC over streamable HTTP, the argument check,
an in-process dispatch), so the difference is that layer's cost.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "evals"), str(ROOT / "evals" / "flows")]

from capability_search import percentile, report  # noqa: E402
from memory_save_recall import mcp_over_http, mint_token, serving  # noqa: E402

QUERY: dict[str, str | int] = {"q": "daytona sandbox deploy", "limit": 10}
WARMUP = 20


def summary(name: str, latencies_ms: list[float]) -> dict[str, float]:
    return {
        f"{name}_ms_median": round(statistics.median(latencies_ms), 3),
        f"{name}_ms_p95": round(percentile(latencies_ms, 95), 3),
    }


async def measure(base: str, token: str, rounds: int, memories: int) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as rest, mcp_over_http(base, token) as mcp:
        for n in range(memories):
            topic = "Deploy to a Daytona sandbox before merging" if n % 10 == 0 else "The user prefers short answers"
            saved = await rest.post("/v1/memory", json={"content": f"{topic} (note {n})", "tags": ["bench"]})
            saved.raise_for_status()
        mcp_ms: list[float] = []
        rest_ms: list[float] = []
        for n in range(WARMUP + rounds):
            started = time.perf_counter()
            result = await mcp.call_tool("execute_capability", {"name": "getMemorySearch", "query": QUERY})
            between = time.perf_counter()
            response = await rest.get("/v1/memory/search", params=QUERY)
            ended = time.perf_counter()
            if result.is_error or response.status_code != 200:
                raise SystemExit(f"a search failed: {result.structured_content} / {response.text}")
            if [h["id"] for h in result.structured_content["results"]] != [h["id"] for h in response.json()["results"]]:
                raise SystemExit("MCP and REST returned different results")
            if n >= WARMUP:
                mcp_ms.append((between - started) * 1000)
                rest_ms.append((ended - between) * 1000)
    figures: dict[str, Any] = {"rounds": rounds, "memories": memories}
    figures |= summary("mcp", mcp_ms) | summary("rest", rest_ms)
    figures["overhead_ms_median"] = round(figures["mcp_ms_median"] - figures["rest_ms_median"], 3)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        env = {
            **os.environ,
            "MEMORY_BANK_DATABASE_URL": f"sqlite:///{Path(directory) / 'memory-bank.db'}",
            "MEMORY_BANK_RATE_LIMIT_RPM": "1000000",
        }
        token = mint_token(env)
        with serving(env) as base:
            figures = asyncio.run(measure(base, token, args.rounds, args.memories))
    report(figures, as_json=args.json)


if __name__ == "__main__":
    main()
