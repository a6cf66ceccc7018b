"""The three human-facing pages: Swagger UI (/docs), Redoc (/redoc) and the capability browser.

Each is a static HTML file that loads only same-origin scripts. The Content-Security-
Policy makes that a promise rather than a habit: a page that tried to reach a CDN
would be blocked by the browser, in tests as in an air-gapped deployment.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse

PAGES_DIR = Path(__file__).parent / "pages"

#: URL -> page file.
PAGES = {"/docs": "swagger.html", "/redoc": "redoc.html", "/capabilities": "capabilities.html"}

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


def _serve(page: Path) -> Callable[[], Awaitable[FileResponse]]:
    async def serve_page() -> FileResponse:
        return FileResponse(page, media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)

    return serve_page


def add_pages(app: FastAPI) -> None:
    for url, name in PAGES.items():
        app.add_api_route(url, _serve(PAGES_DIR / name), methods=["GET"], include_in_schema=False)
