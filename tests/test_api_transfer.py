"""Export and import as JSON lines: round trips, repeat imports, all-or-nothing validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from memory_bank.api.bodies import read_text_body
from memory_bank.api.problems import install_problem_handlers
from memory_bank.handlers import transfer
from memory_bank_codegen.cli import SpecSource, render_package

SPEC = Path(__file__).resolve().parents[1] / "openapi" / "memory.yaml"

KEPT = ("content", "tags", "contexts", "keypath", "version", "scope", "category", "source", "project_id", "agent_id")


@pytest.fixture
def ann(make_client) -> TestClient:
    return make_client("acme", "ann", agent="claude")


@pytest.fixture
def history(ann: TestClient) -> list[dict]:
    """A small account: a patched chain, a keypath with two values, a deleted memory."""
    v1 = ann.post("/v1/memory", json={"content": "editor is vim", "tags": ["editor"], "contexts": [{"snippet": "s", "origin": "chat"}]}).json()
    ann.patch(f"/v1/memory/{v1['id']}", json={"content": "editor is helix"})
    ann.put("/v1/memory/keypaths/user.shell", json={"content": "bash", "project_id": "p"})
    ann.put("/v1/memory/keypaths/user.shell", json={"content": "fish", "source": "conversation"})
    gone = ann.post("/v1/memory", json={"content": "temporary"}).json()
    ann.delete(f"/v1/memory/{gone['id']}")
    return lines(ann)


def lines(client: TestClient) -> list[dict]:
    response = client.get("/v1/memory/export")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in response.text.splitlines()]


def body(records: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def chains(records: list[dict]) -> list[list[tuple]]:
    """Each chain's versions (without ids or timestamps), found by following supersedes_id."""
    by_parent = {r["supersedes_id"]: r for r in records if r["supersedes_id"]}
    result = []
    for root in (r for r in records if r["supersedes_id"] is None):
        chain, node = [], root
        while node:
            chain.append(tuple(json.dumps(node[k]) for k in KEPT) + (node["deleted_at"] is None, node["superseded_at"] is None))
            node = by_parent.get(node["id"])
        result.append(chain)
    return sorted(result)


def test_export_covers_versions_and_tombstones_oldest_first(history: list[dict]) -> None:
    assert len(history) == 5
    assert [r["created_at"] for r in history] == sorted(r["created_at"] for r in history)
    assert sum(r["deleted_at"] is not None for r in history) == 1
    assert sum(r["superseded_at"] is not None for r in history) == 2


def test_round_trip_into_another_org(history: list[dict], make_client) -> None:
    other = make_client("globex", "gus", agent="claude")
    result = other.post("/v1/memory/import", content=body(history))
    assert result.status_code == 200 and result.json() == {"imported": 5, "skipped": 0}
    exported = lines(other)
    assert chains(exported) == chains(history)
    assert {r["user_id"] for r in exported} == {"gus"}
    assert other.get("/v1/memory/keypaths/user.shell").json()["content"] == "fish"
    assert [h["content"] for h in other.get("/v1/memory/search", params={"q": "editor"}).json()["results"]] == ["editor is helix"]
    # The live chain's content key came along, on its current version: saving the words it says
    # now is a replay; the words it said before are a new memory.
    assert other.post("/v1/memory", json={"content": "editor is helix"}).status_code == 200
    assert other.post("/v1/memory", json={"content": "editor is vim"}).status_code == 201
    assert other.post("/v1/memory", json={"content": "temporary"}).status_code == 201


def test_ids_taken_by_another_owner_are_remapped(history: list[dict], make_client) -> None:
    other = make_client("globex", "gus")
    other.post("/v1/memory/import", content=body(history))
    exported = lines(other)
    assert not {r["id"] for r in exported} & {r["id"] for r in history}
    ids = {r["id"] for r in exported}
    assert all(r["supersedes_id"] in ids for r in exported if r["supersedes_id"])


def test_repeat_import_into_another_owner_skips_the_earlier_copies(history: list[dict], make_client) -> None:
    other = make_client("globex", "gus")
    assert other.post("/v1/memory/import", content=body(history)).json() == {"imported": 5, "skipped": 0}
    first = lines(other)
    assert other.post("/v1/memory/import", content=body(history)).json() == {"imported": 0, "skipped": 5}
    assert lines(other) == first


def test_repeat_import_skips_everything(ann: TestClient, history: list[dict]) -> None:
    result = ann.post("/v1/memory/import", content=body(history))
    assert result.json() == {"imported": 0, "skipped": 5}
    assert lines(ann) == history


def test_one_bad_line_writes_nothing(history: list[dict], make_client) -> None:
    other = make_client("globex", "gus")
    broken = body(history).splitlines()
    broken.insert(1, "{not json")
    broken[3] = json.dumps({**json.loads(broken[3]), "content": "x" * 8001})
    response = other.post("/v1/memory/import", content="\n".join(broken))
    assert response.status_code == 422
    problem = response.json()
    assert problem["code"] == "invalid_params"
    assert [e["field"] for e in problem["errors"]] == ["/body/line/2", "/body/line/4"]
    assert lines(other) == []


@pytest.mark.parametrize(
    ("mutate", "rule"),
    [
        (lambda rs: rs + [rs[0]], "unique"),
        (lambda rs: [{**rs[0], "supersedes_id": "ZZZZZZZZZZZZZZZZZZZZZ"}, *rs[1:]], "link"),
        (lambda rs: [{**rs[0], "supersedes_id": rs[1]["id"]}, *rs[1:]], "cycle"),
        (lambda rs: rs + [{**rs[1], "id": "YYYYYYYYYYYYYYYYYYYYY"}], "fork"),
    ],
)
def test_broken_links_write_nothing(history: list[dict], make_client, mutate, rule) -> None:
    other = make_client("globex", "gus")
    response = other.post("/v1/memory/import", content=body(mutate(history)))
    assert response.status_code == 422
    assert rule in {e["rule"] for e in response.json()["errors"]}
    assert lines(other) == []


@pytest.mark.parametrize(
    ("field", "value"),
    [("confidence", True), ("confidence", "0.5"), ("version", "1"), ("created_at", 1700000000), ("created_at", 1.7e9), ("tags", "a")],
)
def test_a_line_is_read_as_strictly_as_a_rest_body(history: list[dict], make_client, field: str, value: object) -> None:
    """A hostile pass: ``"confidence": true`` was stored as 1.0, ``"version": "1"`` as 1 and a
    number of seconds as a date, where REST refuses each with a type error."""
    other = make_client("globex", "gus")
    loose = [{**history[0], field: value}, *history[1:]]
    response = other.post("/v1/memory/import", content=body(loose))
    assert response.status_code == 422
    assert [(e["field"], e["rule"]) for e in response.json()["errors"]] == [("/body/line/1", "type")]
    assert lines(other) == []


def test_import_bounds(ann: TestClient, monkeypatch) -> None:
    monkeypatch.setattr(transfer, "MAX_IMPORT_LINES", 2)
    response = ann.post("/v1/memory/import", content="\n\n\n")
    assert response.status_code == 413 and response.json()["code"] == "payload_too_large"


@pytest.mark.parametrize("content", ["", "\n", " \n\t\r\n"])
def test_an_import_without_records_is_422_naming_the_body(ann: TestClient, content: str) -> None:
    response = ann.post("/v1/memory/import", content=content)
    assert response.status_code == 422
    problem = response.json()
    assert problem["code"] == "invalid_params" and [e["field"] for e in problem["errors"]] == ["/body"]


def test_the_spec_states_the_import_bounds_the_server_enforces() -> None:
    operation = yaml.safe_load(SPEC.read_text())["paths"]["/v1/memory/import"]["post"]
    schema = operation["requestBody"]["content"]["application/x-ndjson"]["schema"]
    routes = render_package([SpecSource(SPEC, "openapi/memory.yaml")])["memory_routes.py"]
    assert f'await read_text_body(request, "application/x-ndjson", max_bytes={schema["x-max-bytes"]})' in routes
    assert f"{schema['x-max-bytes']} bytes" in operation["description"]
    assert f"{transfer.MAX_IMPORT_LINES} lines" in operation["description"]


@pytest.fixture
def capped() -> TestClient:
    """An app whose one route reads a text body of at most 10 bytes."""
    app = FastAPI()
    install_problem_handlers(app)

    @app.post("/text")
    async def text(request: Request) -> dict[str, int]:
        return {"length": len(await read_text_body(request, "text/plain", max_bytes=10))}

    return TestClient(app)


def test_a_text_body_up_to_max_bytes_is_read_whole(capped: TestClient) -> None:
    assert capped.post("/text", content="0123456789").json() == {"length": 10}
    assert capped.post("/text", content="😀😀").json() == {"length": 2}  # 8 bytes


@pytest.mark.parametrize("content", ["01234567890", "😀" * 3])
def test_a_text_body_over_max_bytes_is_413(capped: TestClient, content: str) -> None:
    response = capped.post("/text", content=content)
    assert response.status_code == 413 and response.json()["code"] == "payload_too_large"
    assert "10 bytes" in response.json()["detail"]


async def test_an_oversized_stream_is_refused_as_soon_as_it_passes_the_bound(capped: TestClient) -> None:
    """Driven at the ASGI level: a test client would buffer the whole body before sending."""
    received, sent = [], []

    async def receive() -> dict:
        received.append(1)
        return {"type": "http.request", "body": b"x" * 4, "more_body": len(received) < 1000}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/text", "headers": [], "query_string": b""}
    await capped.app(scope, receive, send)
    assert sent[0]["status"] == 413
    assert len(received) == 3  # 4, 8, then 12 bytes > 10: refused at the third chunk


def test_a_declared_oversized_length_is_refused_without_reading(capped: TestClient) -> None:
    response = capped.post("/text", content=b"x" * 11, headers={"content-length": "11"})
    assert response.status_code == 413
