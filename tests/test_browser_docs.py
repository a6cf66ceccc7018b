"""The docs pages in a real browser: Debian's headless Chromium, driven by Playwright, against uvicorn.

What a person does: open /docs and see every operation; Authorize with a token, then
"Try it out" on getMemorySearch and get 200 with results; "Try it out" pre-fills the spec's
examples (postMemory's body, the keypath and memory_id) instead of "string"; open /redoc; find the right
operation on /capabilities by asking in plain words. Every page must work air-gapped:
a request to any other origin is blocked and fails the test, and so does any console
error (a Content-Security-Policy violation shows up there). Screenshots are saved under
``test-artifacts/`` for a human to look at.

Skipped with a reason when Chromium or Playwright is missing, except under CI=true.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from memory_bank.generated.spec import SPEC
from support.mcp_live import live_server
from support.requirements import unavailable

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
SEEDED = "Deploy to a Daytona sandbox with daytona sandbox create before merging"
#: Console errors that are answers, not page faults: Chromium logs every 401 (a refused
#: token), and Redoc's footer hard-codes its logo from a CDN, which the page's CSP blocks
#: (Redoc then hides the image), which is exactly the air-gap guarantee at work.
EXPECTED_ERRORS = ("the server responded with a status of 401", "'https://cdn.redoc.ly/redoc/logo-mini.svg' violates")
#: Swagger UI renders, fetches and re-renders; generous for a loaded 2-core CI box.
UI_TIMEOUT_MS = 30_000

try:
    from playwright.sync_api import Browser, ConsoleMessage, Locator, Page, Request, Route, expect, sync_playwright
except ImportError:  # pragma: no cover - depends on the environment
    sync_playwright = None


def _missing() -> str | None:
    if sync_playwright is None:
        return "playwright is not installed (pip install -e '.[dev]')"
    if not (Path(CHROMIUM).exists() or shutil.which("chromium")):
        return f"{CHROMIUM} is missing (apt-get install -y chromium)"
    return None


if (reason := _missing()) is not None:
    unavailable("the browser tests", reason)


expect.set_options(timeout=UI_TIMEOUT_MS)


@dataclass(frozen=True)
class Site:
    base_url: str
    token: str


@dataclass
class Offences:
    """What a page did that an air-gapped, error-free page must not."""

    foreign_requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """The real app under uvicorn (tests/support/mcp_live.py) with one saved memory and a read/write token for it."""
    with live_server(tmp_path_factory.mktemp("browser")) as server:
        token = server.token(org="acme", user="ada")
        saved = httpx.post(
            f"{server.url}/v1/memory", json={"content": SEEDED, "tags": ["deploy"]}, headers={"Authorization": f"Bearer {token}"}
        )
        assert saved.status_code == 201, saved.text
        yield Site(server.url, token)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser, site: Site) -> Iterator[Page]:
    """A fresh tab that refuses every other origin and fails the test on any console error."""
    context = browser.new_context(base_url=site.base_url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(UI_TIMEOUT_MS)
    offences = Offences()
    origin = urlsplit(site.base_url).netloc

    def guard(route: Route, request: Request) -> None:
        if urlsplit(request.url).scheme in ("http", "https") and urlsplit(request.url).netloc != origin:
            offences.foreign_requests.append(request.url)
            route.abort()
        else:
            route.continue_()

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error" and not any(expected in message.text for expected in EXPECTED_ERRORS):
            offences.console_errors.append(message.text)

    page.route("**/*", guard)
    page.on("console", on_console)
    page.on("pageerror", lambda error: offences.console_errors.append(str(error)))
    yield page
    context.close()
    assert offences.foreign_requests == [], "a docs page reached outside the server"
    assert offences.console_errors == [], "the page logged errors"


def screenshot(target: Page | Locator, name: str) -> None:
    """A whole page, or one part of it (the operation that was run), under test-artifacts/."""
    ARTIFACTS.mkdir(exist_ok=True)
    if isinstance(target, Locator):
        target.screenshot(path=str(ARTIFACTS / name))
    else:
        target.screenshot(path=str(ARTIFACTS / name), full_page=True)


def spec_operations() -> list[tuple[str, str]]:
    """(first tag, operationId) of every operation: Swagger UI's element id is built from both."""
    return [
        (operation["tags"][0], operation["operationId"])
        for path in SPEC["paths"].values()
        for operation in path.values()
        if isinstance(operation, dict) and "operationId" in operation
    ]


def test_swagger_ui_renders_every_operation_of_the_spec(page: Page) -> None:
    page.goto("/docs")
    expect(page.locator(".opblock")).to_have_count(len(spec_operations()))
    for tag, operation_id in spec_operations():
        expect(page.locator(f"#operations-{tag}-{operation_id}")).to_be_visible()
    screenshot(page, "docs.png")


def authorize(page: Page, token: str) -> None:
    page.locator(".auth-wrapper button.authorize").click()
    page.locator(".modal-ux input").fill(token)
    page.locator(".modal-ux button.authorize").click()
    page.locator(".modal-ux button.btn-done").click()


def try_it_out(page: Page, tag: str, operation_id: str) -> Locator:
    """Open an operation and press "Try it out"; the operation's block."""
    operation = page.locator(f"#operations-{tag}-{operation_id}")
    operation.locator(".opblock-summary").click()
    operation.locator("button.try-out__btn").click()
    return operation


def test_authorize_then_try_it_out_runs_get_memory_search(page: Page, site: Site) -> None:
    page.goto("/docs")
    authorize(page, site.token)

    operation = try_it_out(page, "Memory", "getMemorySearch")
    operation.locator('tr[data-param-name="q"] input').fill("daytona sandbox")
    operation.locator("button.execute").click()

    live = operation.locator(".live-responses-table")
    expect(live.locator("tbody .response-col_status")).to_have_text("200")
    expect(live.locator("tbody .response-col_description")).to_contain_text(SEEDED)
    expect(operation.locator(".curl-command")).to_contain_text("Authorization: Bearer")
    screenshot(operation, "docs-try-it-out.png")

    page.reload()  # persistAuthorization: the token survives a reload
    expect(page.locator(".auth-wrapper button.authorize.locked")).to_be_visible()


def test_try_it_out_pre_fills_post_memory_with_the_spec_example_and_running_it_saves_that(page: Page, site: Site) -> None:
    example = SPEC["paths"]["/v1/memory"]["post"]["requestBody"]["content"]["application/json"]["example"]
    page.goto("/docs")
    authorize(page, site.token)

    operation = try_it_out(page, "Memory", "postMemory")
    body = operation.locator("textarea.body-param__text")
    expect(body).not_to_be_empty()
    assert json.loads(body.input_value()) == example
    operation.locator("button.execute").click()

    live = operation.locator(".live-responses-table")
    expect(live.locator("tbody .response-col_status")).to_have_text("201")
    expect(live.locator("tbody .response-col_description")).to_contain_text(example["content"])
    screenshot(operation, "docs-post-memory-example.png")


def test_try_it_out_sends_import_memories_example_as_json_lines_and_running_it_imports_it(page: Page, site: Site) -> None:
    """Swagger UI reads a media type that says "json" as JSON and quoted the JSON-lines example
    as one JSON string: the import refused its own example (a new user's pass)."""
    example = SPEC["paths"]["/v1/memory/import"]["post"]["requestBody"]["content"]["application/x-ndjson"]["example"]
    page.goto("/docs")
    authorize(page, site.token)

    operation = try_it_out(page, "Transfer", "importMemories")
    body = operation.locator("textarea.body-param__text")
    expect(body).to_have_value(example)
    operation.locator("button.execute").click()

    live = operation.locator(".live-responses-table")
    expect(live.locator("tbody .response-col_status")).to_have_text("200")
    expect(live.locator("tbody .response-col_description")).to_contain_text('"imported": 1')
    screenshot(operation, "docs-import-example.png")


def test_try_it_out_pre_fills_path_parameters_with_the_spec_examples(page: Page) -> None:
    page.goto("/docs")
    for tag, operation_id, name, example in (
        ("Keypaths", "putMemoryKeypath", "keypath", SPEC["paths"]["/v1/memory/keypaths/{keypath}"]["parameters"][0]["example"]),
        ("Memory", "getMemory", "memory_id", SPEC["components"]["parameters"]["MemoryId"]["example"]),
    ):
        field = try_it_out(page, tag, operation_id).locator(f'tr[data-param-name="{name}"] input')
        expect(field).to_have_value(example)


def test_redoc_renders_the_spec(page: Page) -> None:
    page.goto("/redoc")
    for _, operation_id in spec_operations():
        expect(page.locator(f'[id="operation/{operation_id}"]')).to_have_count(1)
    expect(page.get_by_role("heading", name="Search memories by relevance").first).to_be_visible()
    screenshot(page, "redoc.png")


def test_capability_page_lists_by_category_and_finds_get_memory_search(page: Page, site: Site) -> None:
    page.goto("/capabilities")
    expect(page.locator("#status")).to_contain_text("Paste a bearer token")
    page.locator("#token").fill(site.token)
    page.get_by_role("button", name="Use token").click()
    expect(page.locator('section[data-category="Memory"] li.card').first).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('memory-bank.token')") == site.token

    keypath = page.locator('li.card[data-name="getMemoryKeypath"] p.summary')
    expect(keypath.locator("code")).to_have_text("user.preferences.editor")  # the spec's `code`, not backticks
    expect(keypath).not_to_contain_text("`")

    page.locator("#query").fill("search my memories")
    best = page.locator("ol.ranked li.card").first
    expect(best).to_have_attribute("data-name", "getMemorySearch")
    screenshot(page, "capabilities.png")


def test_capability_page_says_where_an_http_only_best_fit_is(page: Page, site: Site) -> None:
    page.goto("/capabilities")
    page.locator("#token").fill(site.token)
    page.get_by_role("button", name="Use token").click()
    page.locator("#query").fill("export my memories")
    expect(page.locator("#status")).to_contain_text("The best fit, exportMemories, is HTTP only: GET /v1/memory/export")
    expect(page.locator('ol.ranked li.card[data-name="exportMemories"]')).to_have_count(0)


def test_capability_page_says_why_a_bad_token_is_refused(page: Page) -> None:
    page.goto("/capabilities")
    page.locator("#token").fill("mb_not-a-real-token")
    page.get_by_role("button", name="Use token").click()
    expect(page.locator("#status")).to_contain_text("Refused (unauthorized)")
