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

import sqlalchemy as sa
from alembic import op

from memory_bank.store.migrations.frozen import BLANK_TAG_CHARACTERS

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

#: Rows read and rewritten per round trip.
_BATCH = 1000
_BLANK = re.compile(f"[{BLANK_TAG_CHARACTERS}]*")
_MEMORY = sa.table("memory", sa.column("pk", sa.BigInteger()), sa.column("tags", sa.JSON()), sa.column("search_text"))


def _kept(tags: Any) -> list[Any]:
    return [tag for tag in tags if not (isinstance(tag, str) and _BLANK.fullmatch(tag))]


def upgrade() -> None:
    connection = op.get_bind()
    after = 0
    while rows := connection.execute(
        sa.select(_MEMORY.c.pk, _MEMORY.c.tags).where(_MEMORY.c.pk > after).order_by(_MEMORY.c.pk).limit(_BATCH)
    ).all():
        changed = [{"row_pk": pk, "kept": kept} for pk, tags in rows if isinstance(tags, list) and (kept := _kept(tags)) != tags]
        if changed:
            connection.execute(
                _MEMORY.update()
                .where(_MEMORY.c.pk == sa.bindparam("row_pk"))
                .values(tags=sa.bindparam("kept", type_=sa.JSON()), search_text=None),
                changed,
            )
        after = rows[-1][0]


def downgrade() -> None:
    """The dropped tags showed nothing and are not kept anywhere: there is nothing to put back."""
