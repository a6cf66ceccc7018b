"""Memories holding a word spelt like the term of a character or an emoji, or a flag, are indexed anew.

A piece of Chinese, Japanese, Korean or Thai text and an emoji are indexed as ASCII terms
(``u`` or ``sym`` and five hex digits a code point: revision 0009). A memory that held such
a word itself (``u0531704eac``) was indexed under the same term, and a search for 北京
found it. Such words are now escaped with an ``x`` (``textsearch.tokenize._word_term``).
Rows whose text holds such a letter sequence anywhere (a superset: re-indexing a row more
is harmless) get their search text cleared, and the start-up backfill writes it anew. So do
rows holding a flag: its two regional indicator symbols became one term, where each was one
and a search for 🇯🇵 found 🇵🇱.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from memory_bank.store.migrations.frozen import clear_search_text

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

#: The shape of those terms, inside any word (the tokenizer's is anchored at both ends), or a
#: regional indicator symbol.
_STALE = re.compile("(?:u|sym)(?:[0-9a-f]{5})+|[\U0001f1e6-\U0001f1ff]")


def upgrade() -> None:
    clear_search_text(_stale)


def downgrade() -> None:
    """The same rows are cleared, and the older backfill writes the older terms."""
    clear_search_text(_stale)


def _stale(searched: list[Any]) -> bool:
    """Whether the row's text, case and compatibility forms folded as the tokenizer folds them, holds either."""
    return _STALE.search(unicodedata.normalize("NFKC", json.dumps(searched, ensure_ascii=False)).casefold()) is not None
