"""Tags with nothing visible are dropped from the memories stored before the rule.

The spec's ``Tag`` asks for one visible character, as ``Content`` does, since a tag of a
zero-width space or of NULs was a label nobody could read or filter by. Rows saved before
may carry such tags, and an export of them could not be imported again, because import
meets the write rules. So every version loses those tags and keeps its others, in order;
a row that changes gets its search text cleared, and the start-up backfill writes it anew.
Its vector stays: a blank tag added nothing a model reads, and the start does not embed (a
cleared vector dropped the memory from semantic search until ``memory-bank db embed``).
Nothing else about a row changes.

The rule is spelt out here, not read from the spec, so that this revision keeps doing what
it did when the spec moves on: the characters the spec's pattern counted as blank when it
was written (``frozen.BLANK_TAG_CHARACTERS``).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import re
from typing import Any

from memory_bank.store.migrations.frozen import BLANK_TAG_CHARACTERS, rewrite_tags

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_BLANK = re.compile(f"[{BLANK_TAG_CHARACTERS}]*")


def _kept(tags: Any) -> list[Any]:
    return [tag for tag in tags if not (isinstance(tag, str) and _BLANK.fullmatch(tag))]


def upgrade() -> None:
    rewrite_tags(_kept)


def downgrade() -> None:
    """The dropped tags showed nothing and are not kept anywhere: there is nothing to put back."""
