"""Whether the server takes a value as an owner id: the filter property tests draw ids through."""

from __future__ import annotations

from memory_bank.owner_ids import check_owner_id


def takes_owner_id(value: str) -> bool:
    """Whether ``check_owner_id`` accepts ``value`` (the same rules for an org, user or agent id)."""
    try:
        check_owner_id("user", value)
    except ValueError:
        return False
    return True
