"""What MCP costs over REST: execute_capability(getMemorySearch) vs GET /v1/memory/search,
next to FastMCP's ``from_fastapi`` bridge over the same app.

    .venv/bin/python bench/mcp_vs_rest.py [--rounds N] [--memories M] [--json] [--in-process]

One run, fresh SQLite, rate limit lifted, one token, M memories, two servers in
subprocesses: ``memory-bank serve`` and the same app behind
``FastMCP.from_fastapi`` (``--serve-fastmcp``, the ``bench`` extra), which forwards
each tool call into the app over its own in-process HTTP client with the token.
Each round makes the same search three ways over keep-alive connections (our MCP,
REST, the FastMCP bridge), so all see the same state; the figures are per-call wall
time at the client, median and p95 in ms, and the ratios of the medians. The MCP
call is the REST call plus the MCP layer (JSON-RPC over streamable HTTP, the argument
check, an in-process dispatch), so the difference is that layer's cost. It is measured
twice: with the Python SDK's client (whose own work, such as checking the result against
the tool's output schema, is in its figure) and as the bare JSON-RPC POST it sends.

``--in-process`` measures the server's side alone: the app in this process behind
``httpx.ASGITransport`` (no sockets, no subprocesses), the bare POST and the REST call
alternated, each timed on the wall clock and in CPU time (``time.process_time``, which a
busy machine's other processes do not inflate as they do the wall clock).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "evals"), str(ROOT / "evals" / "flows")]

from capability_search import percentile, report  # noqa: E402
from memory_save_recall import free_port, mcp_over_http, mint_token, serving  # noqa: E402

QUERY: dict[str, str | int] = {"q": "daytona sandbox deploy", "limit": 10}
#: The same tool call as one bare JSON-RPC POST (what the SDK client sends, without its own client-side work).
TOOL_CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "execute_capability", "arguments": {"name": "getMemorySearch", "query": QUERY}},
}
JSONRPC_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
WARMUP = 20


def summary(name: str, latencies_ms: list[float]) -> dict[str, float]:
    return {
        f"{name}_ms_median": round(statistics.median(latencies_ms), 3),
        f"{name}_ms_p95": round(percentile(latencies_ms, 95), 3),
    }


def serve_fastmcp(port: int, token: str) -> None:
    """The app (settings from the environment) behind ``FastMCP.from_fastapi``, until killed."""
    import uvicorn
    from fastmcp import FastMCP
    from starlette.applications import Starlette
    from starlette.routing import Mount

    from memory_bank.app import create_app
    from memory_bank.generated.spec import SPEC
    from memory_bank.settings import Settings

    app = create_app(Settings())
    app.openapi = lambda: SPEC  # type: ignore[method-assign]  # from_fastapi reads app.openapi(): serve it the spec, as /openapi.json does
    bridge = FastMCP.from_fastapi(app, httpx_client_kwargs={"headers": {"Authorization": f"Bearer {token}"}, "timeout": 30})
    mcp_app = bridge.http_app(path="/mcp", stateless_http=True, json_response=True)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with app.router.lifespan_context(app), mcp_app.router.lifespan_context(mcp_app):
            yield

    # log_config=None as memory-bank serve does: the app logs (its access lines included) as it does there.
    app_with_bridge = Starlette(routes=[Mount("/", mcp_app)], lifespan=lifespan)
    uvicorn.run(app_with_bridge, host="127.0.0.1", port=port, log_config=None)


@contextmanager
def serving_fastmcp(env: dict[str, str], token: str) -> Iterator[str]:
    """``serve_fastmcp`` in a subprocess on a free port until the block ends; yields its base URL."""
    if importlib.util.find_spec("fastmcp") is None:  # the subprocess's failure is not shown: say why here
        raise SystemExit("the FastMCP bridge needs the bench extra: .venv/bin/pip install -e '.[bench]' (or pass --in-process)")
    port = free_port()
    command = [sys.executable, __file__, "--serve-fastmcp", str(port), "--token", token]
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the FastMCP bridge did not come up") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=20)


async def measure(base: str, bridge: str, token: str, rounds: int, memories: int) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as rest,
        mcp_over_http(base, token) as mcp,
        mcp_over_http(bridge, token) as fastmcp,
    ):
        for n in range(memories):
            topic = "Deploy to a Daytona sandbox before merging" if n % 10 == 0 else "The user prefers short answers"
            saved = await rest.post("/v1/memory", json={"content": f"{topic} (note {n})", "tags": ["bench"]})
            saved.raise_for_status()
        bridged = next(t.name for t in (await fastmcp.list_tools()).tools if "getmemorysearch" in t.name.lower())
        mcp_ms: list[float] = []
        jsonrpc_ms: list[float] = []
        rest_ms: list[float] = []
        fastmcp_ms: list[float] = []
        for n in range(WARMUP + rounds):
            started = time.perf_counter()
            result = await mcp.call_tool("execute_capability", {"name": "getMemorySearch", "query": QUERY})
            between = time.perf_counter()
            response = await rest.get("/v1/memory/search", params=QUERY)
            after_rest = time.perf_counter()
            other = await fastmcp.call_tool(bridged, QUERY)
            ended = time.perf_counter()
            bare = await rest.post("/mcp", json=TOOL_CALL, headers=JSONRPC_HEADERS)
            after_bare = time.perf_counter()
            if result.is_error or response.status_code != 200 or other.is_error or bare.json()["result"].get("isError"):
                raise SystemExit(f"a search failed: {result.content} / {response.text} / {other.content} / {bare.text}")
            expected = [h["id"] for h in response.json()["results"]]
            if [h["id"] for h in result.structured_content["results"]] != expected:
                raise SystemExit("MCP and REST returned different results")
            if [h["id"] for h in (other.structured_content or {}).get("results", [])] != expected:
                raise SystemExit("the FastMCP bridge and REST returned different results")
            if n >= WARMUP:
                mcp_ms.append((between - started) * 1000)
                rest_ms.append((after_rest - between) * 1000)
                fastmcp_ms.append((ended - after_rest) * 1000)
                jsonrpc_ms.append((after_bare - ended) * 1000)
    figures: dict[str, Any] = {"rounds": rounds, "memories": memories}
    figures |= summary("mcp", mcp_ms) | summary("mcp_jsonrpc", jsonrpc_ms) | summary("rest", rest_ms) | summary("fastmcp", fastmcp_ms)
    figures["overhead_ms_median"] = round(figures["mcp_ms_median"] - figures["rest_ms_median"], 3)
    figures["mcp_over_rest"] = round(figures["mcp_ms_median"] / figures["rest_ms_median"], 3)
    figures["mcp_jsonrpc_over_rest"] = round(figures["mcp_jsonrpc_ms_median"] / figures["rest_ms_median"], 3)
    figures["fastmcp_over_rest"] = round(figures["fastmcp_ms_median"] / figures["rest_ms_median"], 3)
    figures["fastmcp_over_mcp"] = round(figures["fastmcp_ms_median"] / figures["mcp_ms_median"], 3)
    return figures


async def measure_in_process(database_url: str, rounds: int, memories: int) -> dict[str, Any]:
    """``measure``'s bare POST against REST, in process; figures per call: medians, CPU means."""
    from memory_bank.app import create_app
    from memory_bank.settings import Settings

    app = create_app(Settings(database_url=database_url, rate_limit_rpm=1_000_000))
    token, _ = app.state.tokens.create("bench", "ada", "laptop", ["memory:read", "memory:write"])
    wall: dict[str, list[float]] = {"mcp": [], "rest": []}
    cpu: dict[str, list[float]] = {"mcp": [], "rest": []}
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000", headers={"Authorization": f"Bearer {token}"}) as client,
    ):
        for n in range(memories):
            topic = "Deploy to a Daytona sandbox before merging" if n % 10 == 0 else "The user prefers short answers"
            (await client.post("/v1/memory", json={"content": f"{topic} (note {n})", "tags": ["bench"]})).raise_for_status()
        for n in range(WARMUP + rounds):
            for name in ("mcp", "rest"):
                started, started_cpu = time.perf_counter(), time.process_time()
                if name == "mcp":
                    response = await client.post("/mcp", json=TOOL_CALL, headers=JSONRPC_HEADERS)
                else:
                    response = await client.get("/v1/memory/search", params=QUERY)
                ended, ended_cpu = time.perf_counter(), time.process_time()
                if response.status_code != 200 or (name == "mcp" and response.json()["result"].get("isError")):
                    raise SystemExit(f"a search failed: {response.text}")
                if n >= WARMUP:
                    wall[name].append((ended - started) * 1000)
                    cpu[name].append((ended_cpu - started_cpu) * 1000)
    app.state.engine.dispose()
    figures: dict[str, Any] = {"rounds": rounds, "memories": memories}
    for name in ("mcp", "rest"):
        figures |= summary(name, wall[name]) | {f"{name}_cpu_ms_mean": round(statistics.mean(cpu[name]), 3)}
    figures["mcp_over_rest"] = round(figures["mcp_ms_median"] / figures["rest_ms_median"], 3)
    figures["mcp_over_rest_cpu"] = round(figures["mcp_cpu_ms_mean"] / figures["rest_cpu_ms_mean"], 3)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--in-process", action="store_true", help="the server's side alone: the app in this process, no sockets")
    parser.add_argument("--serve-fastmcp", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--token", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_fastmcp:
        serve_fastmcp(args.serve_fastmcp, args.token)
        return
    with tempfile.TemporaryDirectory() as directory:
        if args.in_process:
            from memory_bank.store.database import create_schema, make_engine

            url = f"sqlite:///{Path(directory) / 'memory-bank.db'}"
            engine = make_engine(url)
            create_schema(engine)
            engine.dispose()
            report(asyncio.run(measure_in_process(url, args.rounds, args.memories)), as_json=args.json)
            return
        env = {
            **os.environ,
            "MEMORY_BANK_DATABASE_URL": f"sqlite:///{Path(directory) / 'memory-bank.db'}",
            "MEMORY_BANK_RATE_LIMIT_RPM": "1000000",
        }
        token = mint_token(env)
        with serving(env) as base, serving_fastmcp(env, token) as bridge:
            figures = asyncio.run(measure(base, bridge, token, args.rounds, args.memories))
    report(figures, as_json=args.json)


if __name__ == "__main__":
    main()
