"""Adding an operation is: the spec, regenerate, one handler method, and its tests. Nothing else.

A throwaway operation is added to a copy of the repository's spec and generated into a
package of its own; the app then runs with that package and a handler class that has
exactly one method more. The operation answers over REST and through the catalog
(``execute_capability``), so nothing else (a list of tools, a golden, a count, the
search tool's description) needed an edit.
"""

from __future__ import annotations

import copy
import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

import memory_bank.app
from memory_bank.app import AppHandlers, create_app
from memory_bank.generated import models
from memory_bank.reply import Reply
from memory_bank.security.principal import Principal
from memory_bank.settings import Settings
from memory_bank_codegen.cli import SpecSource, render_package, spec_sources
from memory_bank_codegen.loader import load_spec
from support.mcp_live import call_tool

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "throwaway_generated"
OPERATION = "getMemoryTally"


def _throwaway_operation() -> dict[str, Any]:
    """A read that reuses a component schema and the spec's shared error responses."""
    return {
        "get": {
            "operationId": OPERATION,
            "summary": "Count a tally of memories",
            "description": "Returns a tally of the caller's memories: how many were imported, how many skipped.",
            "tags": ["Memory"],
            "x-capability": {
                "category": "Memory",
                "permission": "memory:read",
                "expose": True,
                "examples": [
                    "how many memories do I have?",
                    "count my notes",
                    "give me a tally of saved facts",
                    "how much have you stored about me",
                    "number of memories imported",
                ],
            },
            "responses": {
                "200": {
                    "description": "The tally.",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ImportResult"}}},
                },
                "401": {"$ref": "#/components/responses/Unauthorized"},
            },
        }
    }


@pytest.fixture
def generated(tmp_path: Path) -> Iterator[dict[str, ModuleType | Any]]:
    """The copied spec with one operation more, regenerated into an importable package."""
    spec = copy.deepcopy(load_spec(ROOT / "openapi" / "memory.yaml"))
    spec["paths"]["/v1/memory/tally"] = _throwaway_operation()
    spec_path = tmp_path / "openapi" / "memory.yaml"
    spec_path.parent.mkdir()
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    package = tmp_path / PACKAGE
    package.mkdir()
    sources = [SpecSource(spec_path, "openapi/memory.yaml"), *spec_sources(ROOT)[1:]]  # the other specs as they are
    for name, text in render_package(sources).items():
        (package / name).write_text(text, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        yield {
            "memory_routes": importlib.import_module(f"{PACKAGE}.memory_routes"),
            "memory_interface": importlib.import_module(f"{PACKAGE}.memory_interface"),
            "catalog": importlib.import_module(f"{PACKAGE}.catalog"),
            "spec": importlib.import_module(f"{PACKAGE}.spec"),
        }
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


class TallyHandlers(AppHandlers):
    """The handlers of today plus the one method the new operation needs."""

    async def get_memory_tally(self, principal: Principal) -> Reply[models.ImportResult]:
        return Reply(models.ImportResult(imported=3, skipped=1))


def use_generated(monkeypatch: pytest.MonkeyPatch, generated: dict[str, Any]) -> None:
    monkeypatch.setattr(memory_bank.app, "memory_routes", generated["memory_routes"])
    monkeypatch.setattr(memory_bank.app, "MemoryBankApi", generated["memory_interface"].MemoryBankApi)
    monkeypatch.setattr(memory_bank.app, "CAPABILITIES", generated["catalog"].CAPABILITIES)
    monkeypatch.setattr(memory_bank.app, "SPEC", generated["spec"].SPEC)


def test_a_new_operation_without_its_handler_method_stops_the_start_naming_it(
    generated: dict[str, Any], settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the check it started, was offered to agents, and answered 500 at the first call."""
    use_generated(monkeypatch, generated)
    with pytest.raises(TypeError, match=r"^AppHandlers lacks get_memory_tally, which the spec's MemoryBankApi needs"):
        create_app(settings)


def test_a_new_operation_needs_only_the_spec_a_regeneration_and_one_handler_method(
    generated: dict[str, Any], settings: Settings, make_token: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_generated(monkeypatch, generated)
    monkeypatch.setattr(memory_bank.app, "AppHandlers", TallyHandlers)
    app = create_app(settings)
    token = make_token("acme", "ann", ["memory:read"])
    headers = {"Authorization": f"Bearer {token}"}
    try:
        with TestClient(app, base_url=settings.public_url, headers=headers) as client:
            rest = client.get("/v1/memory/tally")
            assert rest.status_code == 200, rest.text
            assert rest.json() == {"imported": 3, "skipped": 1}

            result = call_tool(client, token, "execute_capability", {"name": OPERATION})  # asserts the 200
            assert not result.get("isError"), result
            assert result["structuredContent"] == {"imported": 3, "skipped": 1}

            assert OPERATION in json.dumps(client.get("/openapi.json").json()["paths"]["/v1/memory/tally"])
            found = client.get("/v1/capabilities", params={"q": "tally of memories"}).json()
            assert found["results"][0]["name"] == OPERATION
    finally:
        app.state.engine.dispose()
