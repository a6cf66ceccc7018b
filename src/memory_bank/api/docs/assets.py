"""Where the docs pages' files come from, and how they are served.

The service must work air-gapped, so no page loads anything from a CDN: Swagger UI 5
(Apache-2.0; version 5 is the first to read OpenAPI 3.1) and Redoc 2 (MIT) come as
plain files inside the ``fastapi-offline`` package (MIT) from PyPI, and are served as
they are. Our own scripts and styles sit beside this module. ``StaticFiles`` gives
both ETag revalidation, so a reload after a deploy never shows stale scripts.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

#: The URL prefix of every asset; pages refer to it relatively (``docs/assets/...``)
#: so they keep working behind a proxy that mounts the app under a path.
ASSETS_URL = "/docs/assets"

#: swagger-ui-bundle.js, swagger-ui.css, redoc.standalone.js, favicon.png.
VENDOR_DIR = Path(str(files("fastapi_offline").joinpath("static")))
OWN_DIR = Path(__file__).parent / "static"


def mount_assets(app: FastAPI) -> None:
    """Serve the vendored files under ``vendor/`` and ours beside them (the longer prefix first)."""
    app.mount(f"{ASSETS_URL}/vendor", StaticFiles(directory=VENDOR_DIR), name="docs-vendor")
    app.mount(ASSETS_URL, StaticFiles(directory=OWN_DIR), name="docs-assets")
