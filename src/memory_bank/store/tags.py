"""Tags as a set of NFC strings: a tag that looks the same is the same tag.

"café" is U+00E9 from one keyboard and "e" + U+0301 from another; a filter by one missed
memories tagged by the other, and ``["a", "a"]`` was kept twice (a new user's pass). So a
tag is put in NFC where it enters (a save, a patch, a put, an import line) and where it is
asked for (the ``tags`` filter), and a tag given twice is kept once, in its first place.
Case is the writer's: "SQL" and "sql" stay two tags, as search's own words are folded and
tags are labels the owner chose.

NFC lengthens a few characters (the composition exclusions: U+0958 is two code points in
NFC), so a tag whose NFC form would pass the spec's bound stays as written: normalising
never turns a valid tag into one the spec refuses to answer.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

#: The spec's ``Tag`` bound, in characters.
MAX_TAG_LENGTH = 64


def tag(value: str) -> str:
    """``value`` in NFC, unless that would pass :data:`MAX_TAG_LENGTH`."""
    composed = unicodedata.normalize("NFC", value)
    return composed if len(composed) <= MAX_TAG_LENGTH else value


def tag_set(values: Iterable[str]) -> list[str]:
    """Each of ``values`` as :func:`tag`, each once, in the order first given."""
    return list(dict.fromkeys(tag(value) for value in values))


def with_tag_set(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields`` with their ``tags``, when given, as :func:`tag_set`."""
    tags = fields.get("tags")
    return {**fields, "tags": tag_set(tags)} if tags is not None else dict(fields)
