"""``/ready``: 200 when the database (and a configured Redis) answer, else a 503 problem naming what is down."""

from __future__ import annotations

import shutil

import pytest
from fastapi.testclient import TestClient
from test_rate_limit import shared_redis  # noqa: F401  (fixture)

from memory_bank.app import create_app
from memory_bank.settings import Settings
from support.backends import free_port


def ready(settings: Settings) -> tuple[int, dict[str, object]]:
    app = create_app(settings)
    try:
        with TestClient(app) as client:
            response = client.get("/ready")
        return response.status_code, response.json()
    finally:
        app.state.engine.dispose()


def test_ready_when_the_database_answers(settings: Settings) -> None:
    assert ready(settings) == (200, {"status": "ready", "checks": {"database": "ok"}})


def test_health_says_only_that_the_process_is_up(client: TestClient) -> None:
    assert client.get("/health").json() == {"status": "ok"}


def test_not_ready_when_the_database_is_gone(tmp_path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    app = create_app(Settings(database_url=f"sqlite:///{folder / 'memory-bank.db'}"))
    with TestClient(app) as client:
        app.state.engine.dispose()
        shutil.rmtree(folder)  # SQLite cannot open (or re-create) the file any more
        response = client.get("/ready")
    app.state.engine.dispose()

    assert response.status_code == 503
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["code"] == "backend_unavailable" and "database" in problem["detail"]
    assert problem["checks"] == {"database": "unreachable"}


def test_not_ready_when_the_configured_redis_is_down(settings: Settings) -> None:
    status, problem = ready(settings.model_copy(update={"redis_url": f"redis://127.0.0.1:{free_port()}/0"}))
    assert status == 503
    assert problem["detail"] == "not ready: redis unreachable"
    assert problem["checks"] == {"database": "ok", "redis": "unreachable"}


@pytest.mark.redis
def test_ready_pings_a_configured_redis(settings: Settings, shared_redis: str) -> None:  # noqa: F811
    assert ready(settings.model_copy(update={"redis_url": shared_redis})) == (
        200,
        {"status": "ready", "checks": {"database": "ok", "redis": "ok"}},
    )


def test_the_service_root_leads_a_person_to_the_docs(client: TestClient) -> None:
    response = client.get("/", follow_redirects=False)
    assert response.status_code == 307 and response.headers["location"] == "/docs"
    assert "swagger-ui" in client.get("/").text
