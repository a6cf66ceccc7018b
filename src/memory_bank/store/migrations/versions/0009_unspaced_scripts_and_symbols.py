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
from typing import Any

from memory_bank.store.migrations.frozen import clear_search_text

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    clear_search_text(_not_ascii)


def downgrade() -> None:
    """The same rows are cleared, and the older backfill writes the older terms."""
    clear_search_text(_not_ascii)


def _not_ascii(searched: list[Any]) -> bool:
    return not json.dumps(searched, ensure_ascii=False).isascii()
