"""Regression tests for what spec fuzzing found (tests/test_fuzz_spec.py), one per finding."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from memory_bank.app import create_app
from memory_bank.settings import Settings
from support.clients import MakeClient


def test_a_context_without_origin_is_returned_without_origin_not_with_null(make_client: MakeClient) -> None:
    ann = make_client("acme", "ann")
    saved = ann.post("/v1/memory", json={"content": "Uses vim", "contexts": [{"snippet": "said so"}]})
    assert saved.status_code == 201 and saved.json()["contexts"] == [{"snippet": "said so"}]
    assert ann.get("/v1/memory").json()["items"][0]["contexts"] == [{"snippet": "said so"}]


def test_null_for_a_field_the_spec_does_not_make_nullable_is_refused(make_client: MakeClient) -> None:
    ann = make_client("acme", "ann")
    refused = ann.post("/v1/memory", json={"content": "x", "project_id": None, "contexts": [{"snippet": "s", "origin": None}]})
    assert refused.status_code == 422
    assert {(e["field"], e["rule"]) for e in refused.json()["errors"]} == {
        ("/body/project_id", "type"),
        ("/body/contexts/0/origin", "type"),
    }
    assert ann.post("/v1/memory", json={"content": "x"}).status_code == 201  # leaving fields out is fine


def test_overlapping_lifespans_of_one_app_start_and_stop_cleanly(tmp_path: Path) -> None:
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'memory-bank.db'}"))
    with TestClient(app) as outer:
        with TestClient(app) as inner:
            assert inner.get("/health").status_code == 200
        assert outer.get("/health").status_code == 200
    app.state.engine.dispose()
