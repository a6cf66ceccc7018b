"""Memories written in a script without spaces, or holding an emoji, are indexed anew.

The search terms of such text changed (``textsearch.tokenize.folded_terms``): a run of
Chinese, Japanese, Korean or Thai became its characters and their pairs, spelt in ASCII,
where it was one term that only the whole run matched; a symbol such as an emoji became a
term, where it was dropped; Japanese voicing and Thai vowel marks are kept; a Hangul
syllable stays one character. Rows whose searched text is plain ASCII keep the terms they
had. Every other row gets its search text cleared, and the start-up backfill writes it
anew (and tells replicas, whose postings hold the old terms). Vectors stay: the model reads
the text, not the terms.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

#: Rows read and rewritten per round trip.
_BATCH = 1000
_MEMORY = sa.table(
    "memory",
    sa.column("pk", sa.BigInteger()),
    sa.column("content", sa.Text()),
    sa.column("tags", sa.JSON()),
    sa.column("contexts", sa.JSON()),
    sa.column("search_text"),
)


def upgrade() -> None:
    _clear_non_ascii_rows()


def downgrade() -> None:
    """The same rows are cleared, and the older backfill writes the older terms."""
    _clear_non_ascii_rows()


def _clear_non_ascii_rows() -> None:
    connection = op.get_bind()
    columns = (_MEMORY.c.pk, _MEMORY.c.content, _MEMORY.c.tags, _MEMORY.c.contexts)
    after = 0
    while rows := connection.execute(sa.select(*columns).where(_MEMORY.c.pk > after).order_by(_MEMORY.c.pk).limit(_BATCH)).all():
        stale = [{"row_pk": pk} for pk, *searched in rows if not json.dumps(searched, ensure_ascii=False).isascii()]
        if stale:
            connection.execute(_MEMORY.update().where(_MEMORY.c.pk == sa.bindparam("row_pk")).values(search_text=None), stale)
        after = rows[-1][0]

