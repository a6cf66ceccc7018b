"""Memories holding a word spelt like the term of a character or an emoji are indexed anew.

A piece of Chinese, Japanese, Korean or Thai text and an emoji are indexed as ASCII terms
(``u`` or ``sym`` and five hex digits a code point: revision 0009). A memory that held such
a word itself (``u0531704eac``) was indexed under the same term, and a search for 北京
found it. Such words are now escaped with an ``x`` (``textsearch.tokenize._word_term``).
Rows whose text holds such a letter sequence anywhere (a superset: re-indexing a row more
is harmless) get their search text cleared, and the start-up backfill writes it anew.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import json
import re
import unicodedata

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
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
#: The shape of those terms, inside any word (the tokenizer's is anchored at both ends).
_SPELT_LIKE = re.compile("(?:u|sym)(?:[0-9a-f]{5})+")


def upgrade() -> None:
    _clear_rows_spelling_terms()


def downgrade() -> None:
    """The same rows are cleared, and the older backfill writes the older terms."""
    _clear_rows_spelling_terms()


def _clear_rows_spelling_terms() -> None:
    connection = op.get_bind()
    columns = (_MEMORY.c.pk, _MEMORY.c.content, _MEMORY.c.tags, _MEMORY.c.contexts)
    after = 0
    while rows := connection.execute(sa.select(*columns).where(_MEMORY.c.pk > after).order_by(_MEMORY.c.pk).limit(_BATCH)).all():
        stale = [{"row_pk": pk} for pk, *searched in rows if _SPELT_LIKE.search(_folded(searched))]
        if stale:
            connection.execute(_MEMORY.update().where(_MEMORY.c.pk == sa.bindparam("row_pk")).values(search_text=None), stale)
        after = rows[-1][0]


def _folded(searched: list[object]) -> str:
    """The row's searched text as one string, case and compatibility forms folded as the tokenizer folds them."""
    return unicodedata.normalize("NFKC", json.dumps(searched, ensure_ascii=False)).casefold()
