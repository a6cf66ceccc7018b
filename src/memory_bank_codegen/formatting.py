"""Generated Python goes through ``ruff format``, so it reads like code written by hand.

The formatter runs inside the generator, on the text it returns, so ``--check`` compares
formatted text with formatted text; ruff is pinned in the ``generate`` extra because a
different formatter release may lay the same code out differently.
"""

from __future__ import annotations

import subprocess
import sys

from memory_bank_codegen.errors import CodegenError

__all__ = ["LINE_LENGTH", "format_python"]

LINE_LENGTH = 100


def format_python(source: str, name: str) -> str:
    """``source`` as ``ruff format`` lays it out (settings fixed here, not read from any config)."""
    command = [sys.executable, "-m", "ruff", "format", "--isolated", f"--line-length={LINE_LENGTH}"]
    result = subprocess.run(
        [*command, "--stdin-filename", name, "-"], input=source, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise CodegenError.at("spec", "python-format", f"{name}: ruff format refused it: {result.stderr.strip()}")
    return result.stdout
