"""Start-up check that the handlers implement every operation the generated routers call.

The generated interfaces are Protocols, which nothing checks at run time: an operation added
to a spec and regenerated without its handler started the service, was offered by
search_capabilities, and answered 500 (an AttributeError) at its first call. mypy catches it
in CI; this catches it for a developer who starts the service first.
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def require_implemented(implementation: T, interface: type) -> T:
    """``implementation``, once it has a method for each of ``interface``'s; TypeError naming the missing ones."""
    missing = [
        name
        for name, member in vars(interface).items()
        if callable(member) and not name.startswith("_") and not callable(getattr(implementation, name, None))
    ]
    if missing:
        raise TypeError(
            f"{type(implementation).__name__} lacks {', '.join(missing)}, which the spec's {interface.__name__} "
            "needs: write each in src/memory_bank/handlers/ (the interface, generated from the spec, gives its signature)"
        )
    return implementation
