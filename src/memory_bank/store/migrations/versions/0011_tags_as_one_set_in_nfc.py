"""Tags stored before they were a set of NFC strings are put in NFC, each kept once.

A tag is now put in NFC and kept once where it enters (``store.tags``), and the ``tags``
filter asks in NFC: a tag stored as "e" + U+0301 before that would no longer be found by
its own spelling. So every version's tags become NFC, each once, in their first order; a
tag whose NFC form would pass the spec's 64 characters stays as written, as at entry. A row
that changes gets its search text cleared, and the start-up backfill writes it anew (its
words are folded already; a tag given twice no longer counts twice). Its vector stays.

The rule is spelt out here, not imported from ``store.tags``, so that this revision keeps
doing what it did when that module moves on.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import unicodedata
from typing import Any

from memory_bank.store.migrations.frozen import rewrite_tags

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

#: The spec's ``Tag`` bound when this revision was written.
_MAX_TAG_LENGTH = 64


def _composed(tag: Any) -> Any:
    if not isinstance(tag, str):
        return tag
    composed = unicodedata.normalize("NFC", tag)
    return composed if len(composed) <= _MAX_TAG_LENGTH else tag


def _tag_set(tags: list[Any]) -> list[Any]:
    kept: list[Any] = []
    for tag in map(_composed, tags):
        if tag not in kept:
            kept.append(tag)
    return kept


def upgrade() -> None:
    rewrite_tags(_tag_set)


def downgrade() -> None:
    """Which spelling a tag had, and which repeats it had, are not kept anywhere: nothing to put back."""
