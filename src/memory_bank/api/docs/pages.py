"""The three human-facing pages: Swagger UI (/docs), Redoc (/redoc) and the capability browser.

Each is one shared layout (head, the bar linking the three) around its own main part,
rendered once at start-up, and loads only same-origin files. The Content-Security-
Policy makes that a promise rather than a habit: a page that tried to reach a CDN
would be blocked by the browser, in tests as in an air-gapped deployment.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from string import Template

from fastapi import FastAPI
from fastapi.responses import HTMLResponse

PAGES_DIR = Path(__file__).parent / "pages"


@dataclass(frozen=True)
class Page:
    """One page: its title, the files it loads (under ``docs/assets/``) and its main HTML."""

    title: str
    stylesheets: tuple[str, ...]
    scripts: tuple[str, ...]
    main: str

    def render(self, layout: Template) -> str:
        return layout.substitute(
            title=self.title,
            stylesheets="\n".join(f'  <link rel="stylesheet" href="docs/assets/{name}">' for name in self.stylesheets),
            main=self.main,
            scripts="\n".join(f'  <script src="docs/assets/{name}"></script>' for name in self.scripts),
        )


#: URL -> page.
PAGES = {
    "/docs": Page(
        "Memory Bank API",
        ("vendor/swagger-ui.css", "docs.css"),
        ("vendor/swagger-ui-bundle.js", "swagger-init.js"),
        '  <div id="swagger-ui"></div>',
    ),
    "/redoc": Page(
        "Memory Bank API reference",
        ("docs.css",),
        ("vendor/redoc.standalone.js", "redoc-init.js"),
        '  <div id="redoc"></div>',
    ),
    "/capabilities": Page(
        "Memory Bank capabilities",
        ("docs.css", "capabilities.css"),
        ("capabilities.js",),
        (PAGES_DIR / "capabilities-main.html").read_text(encoding="utf-8"),
    ),
}

#: Same-origin everything; inline styles for Swagger UI and Redoc, and blob: workers
#: for Redoc's search index.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self' data:",
        "worker-src 'self' blob:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _serve(html: str) -> Callable[[], Awaitable[HTMLResponse]]:
    async def serve_page() -> HTMLResponse:
        return HTMLResponse(html, headers=PAGE_HEADERS)

    return serve_page


def add_pages(app: FastAPI) -> None:
    layout = Template((PAGES_DIR / "layout.html").read_text(encoding="utf-8"))
    for url, page in PAGES.items():
        app.add_api_route(url, _serve(page.render(layout)), methods=["GET"], include_in_schema=False)
