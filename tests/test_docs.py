"""The docs pages without a browser: what is served, with which headers, and that nothing points off-site."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memory_bank.api.docs.assets import OWN_DIR, VENDOR_DIR
from memory_bank.api.docs.pages import PAGES, PAGES_DIR

#: Any absolute URL in our own pages or scripts would be a way off the machine.
ABSOLUTE_URL = re.compile(r"(?:https?:)?//[\w.-]+\.[a-z]{2,}", re.IGNORECASE)
VENDOR_FILES = ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js", "favicon.png")


@pytest.mark.parametrize("url", sorted(PAGES))
def test_pages_are_public_html_locked_to_the_same_origin(client: TestClient, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    policy = response.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy and "connect-src 'self'" in policy
    assert response.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("name", VENDOR_FILES)
def test_swagger_ui_and_redoc_are_served_from_the_installed_package(client: TestClient, name: str) -> None:
    response = client.get(f"/docs/assets/vendor/{name}")
    assert response.status_code == 200 and response.content == (VENDOR_DIR / name).read_bytes()


def test_swagger_ui_is_version_5_which_reads_openapi_3_1() -> None:
    bundle = (VENDOR_DIR / "swagger-ui-bundle.js").read_text(encoding="utf-8", errors="replace")
    assert re.search(r'PACKAGE_VERSION:"5\.\d+\.\d+"', bundle)


def test_assets_revalidate_with_an_etag(client: TestClient) -> None:
    first = client.get("/docs/assets/capabilities.js")
    again = client.get("/docs/assets/capabilities.js", headers={"If-None-Match": first.headers["etag"]})
    assert first.status_code == 200 and again.status_code == 304


def test_unknown_assets_are_404_problems(client: TestClient) -> None:
    response = client.get("/docs/assets/vendor/../../pages/swagger.html")
    assert response.status_code == 404 and response.json()["code"] == "not_found"


@pytest.mark.parametrize("path", sorted([*PAGES_DIR.iterdir(), *OWN_DIR.iterdir()]), ids=lambda p: p.name)
def test_our_pages_and_scripts_reference_nothing_off_site(path: Path) -> None:
    assert ABSOLUTE_URL.findall(path.read_text(encoding="utf-8")) == []


def test_swagger_ui_keeps_the_token_and_reads_the_handwritten_spec() -> None:
    init = (OWN_DIR / "swagger-init.js").read_text(encoding="utf-8")
    assert "persistAuthorization: true" in init and 'url: "openapi.json"' in init
