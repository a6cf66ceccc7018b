"""Human-facing documentation: Swagger UI, Redoc and the capability browser, with bundled assets.

All three read the handwritten specs at ``/openapi.json`` (or call the API) from the
same origin; nothing is fetched from the internet.
"""

from __future__ import annotations

from fastapi import FastAPI

from memory_bank.api.docs.assets import mount_assets
from memory_bank.api.docs.pages import add_pages


def install_docs(app: FastAPI) -> None:
    """``/docs``, ``/redoc``, ``/capabilities`` and the files they load under ``/docs/assets``."""
    add_pages(app)
    mount_assets(app)
