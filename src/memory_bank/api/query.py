"""The query-string rule FastAPI does not enforce: a parameter the spec declares single-valued comes once.

Starlette keeps every value of a repeated key and FastAPI hands a scalar parameter the
last one, so ``?limit=5&limit=500`` used to mean ``limit=500`` and ``?limit=500&limit=5``
``limit=5``: two readings of one request, and a proxy or a log that kept the first value
would disagree with the service. The generated routes ask ``single_valued`` (after the
principal, so a bad token is still 401 first) for the names of their parameters that
are not arrays; an array (``tags``) is repeated by design.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from fastapi import Request

from memory_bank.api.problems import validation_error
from memory_bank.errors import FieldError


def single_valued(*names: str) -> Callable[[Request], None]:
    """A dependency refusing, 422 ``invalid_params``, a query string that gives any of ``names`` more than once."""
    declared = frozenset(names)

    def check(request: Request) -> None:
        counts = Counter(key for key, _ in request.query_params.multi_items() if key in declared)
        repeated = [name for name in names if counts[name] > 1]
        if repeated:
            raise validation_error(
                [FieldError(f"/query/{name}", "type", f"given {counts[name]} times; it takes one value") for name in repeated]
            )

    return check
