"""Running one migration again over rows laid out as the code before it left them."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Engine

from memory_bank.store import migrations


def rerun(engine: Engine, revision: str, before: str) -> None:
    """Downgrade ``engine``'s schema to ``before``, then upgrade it to ``revision``, in one transaction."""
    config = Config()
    config.set_main_option("script_location", str(Path(migrations.__file__).parent))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, before)
        command.upgrade(config, revision)
