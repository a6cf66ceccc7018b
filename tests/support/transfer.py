"""Shared by the export/import tests: reading an export, writing an import body, comparing chains, a live server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from memory_bank.app import create_app
from memory_bank.security.principal import Principal
from memory_bank.settings import Settings
from memory_bank.store.memories import MemoryStore
from memory_bank.store.tables import MemoryRow
from support.backends import free_port
from support.mcp_live import serving

#: What an export record says beyond its id and owner: all of it must survive a round trip.
OWNER_FIELDS = ("id", "user_id", "supersedes_id")


def exported(client: TestClient) -> list[dict[str, Any]]:
    response = client.get("/v1/memory/export")
    assert response.status_code == 200
    return [json.loads(line) for line in response.text.split("\n") if line]


def ndjson(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def chains(records: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Each version chain, oldest first, without ids and owners, in a stable order."""
    by_parent = {r["supersedes_id"]: r for r in records if r.get("supersedes_id")}
    result = []
    for root in (r for r in records if not r.get("supersedes_id")):
        chain, node = [], root
        while node is not None:
            chain.append({k: v for k, v in node.items() if k not in OWNER_FIELDS})
            node = by_parent.get(node["id"])
        result.append(chain)
    return sorted(result, key=lambda chain: json.dumps(chain, sort_keys=True))


@contextmanager
def live_app(settings: Settings) -> Iterator[tuple[FastAPI, str]]:
    """The real app under uvicorn on a free loopback port until the block ends: (app, base url)."""
    port = free_port()
    app = create_app(settings.model_copy(update={"rate_limit_rpm": 100_000}))
    with serving(app, port):
        yield app, f"http://127.0.0.1:{port}"


def exported_rows(store: MemoryStore, principal: Principal, limit: int) -> list[MemoryRow]:
    """The first ``limit`` rows of ``principal``'s export, as the export reads them."""
    with store.export_snapshot(principal) as page:
        return page(None, limit)
