"""What an org, user or agent id may be: the one rule every door that mints or reads one applies.

Below settings and security both: the settings check the org ids of rate-limit overrides,
security the ids a token or a JWT claim names, the store and the CLI the ids they mint.
"""

from __future__ import annotations

import re
import unicodedata


#: The longest org, user or agent id the tables hold (``tables.MemoryRow``).
MAX_OWNER_ID_LENGTH = 128

#: Categories no id may hold: controls, format characters (U+200B zero-width space,
#: U+202E right-to-left override, U+FEFF ...), surrogates, private use, unassigned, and
#: line or paragraph separators. Each is invisible or shown differently by each terminal.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})

#: Unicode's Default_Ignorable_Code_Point characters outside those categories (Hangul
#: fillers, variation selectors, the combining grapheme joiner ...), and the blank braille
#: pattern: letters or marks that render as nothing, so ``a\u3164`` would list as ``a``.
_INVISIBLE = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2800\u3164\ufe00-\ufe0f\uffa0\U000e0100-\U000e01ef]")


def check_owner_id(kind: str, value: str) -> str:
    """``value`` if it can name an org, user or agent; else ``ValueError`` saying why.

    Owner ids are compared in SQL, and MariaDB compares VARCHARs with PAD SPACE even
    under ``utf8mb4_bin``: ``'acme ' = 'acme'`` is true there and false on SQLite. An id
    with a trailing space would share another org's or user's memories on one backend
    only, so ids that differ from another only in surrounding blanks, or that are empty,
    or are longer than the column, are refused where they are minted instead of being
    silently truncated or padded by a database.

    Two ids that look the same in a list must be the same owner, so an id also holds no
    invisible character (``_REFUSED_CATEGORIES``, ``_INVISIBLE``), no space but U+0020,
    and is in NFKC form: ``ａｃｍｅ`` (fullwidth), ``e`` + U+0301 beside ``é`` and a
    no-break space beside a space would each be a second owner under the same name.
    Letters of different scripts that look alike (Latin ``a``, Cyrillic ``а``) are not
    told apart: both are legitimate in ids.
    """
    if not value:
        raise ValueError(f"the {kind} id is empty")
    if len(value) > MAX_OWNER_ID_LENGTH:
        raise ValueError(f"the {kind} id is longer than {MAX_OWNER_ID_LENGTH} characters")
    if value != value.strip():
        raise ValueError(f"the {kind} id {value!r} starts or ends with whitespace")
    for character in value:
        category = unicodedata.category(character)
        if category in _REFUSED_CATEGORIES or _INVISIBLE.match(character) or (category == "Zs" and character != " "):
            what = "a control character" if category == "Cc" else "an invisible or non-standard character"
            raise ValueError(f"the {kind} id {value!r} contains {what}, U+{ord(character):04X}")
    if unicodedata.normalize("NFKC", value) != value:
        raise ValueError(
            f"the {kind} id {value!r} is not in NFKC form: write it as {unicodedata.normalize('NFKC', value)!r}"
        )
    return value


#: A ``.`` or ``..`` between slashes or at either end of an id.
_DOT_SEGMENT = re.compile(r"(?:^|/)(\.\.?)(?=/|$)")


class UnroutableAgentId(ValueError):
    """A new agent id that no URL can carry (``check_new_agent_id``)."""


def check_new_agent_id(value: str) -> str:
    """``value`` if it can name a new agent; else ``ValueError`` saying why.

    An agent id is a path segment of ``/v1/admin/agents/{id}/deactivate`` (its ``/`` taken
    as ``%2F`` or as a slash alike), and clients and servers remove the dot segments ``.``
    and ``..`` from a path before it is sent or routed (RFC 3986 §5.2.4): an agent ``..``,
    ``a/.`` or ``a/../b`` was registered, then answered 404 or never reached, so no admin
    could stop it over HTTP. Checked where an agent is first registered only: an agent
    that already has such an id keeps working, and the CLI can still deactivate it.
    The spec cannot say it in the pattern: pydantic's regex engine has no look-ahead.
    """
    check_owner_id("agent", value)
    dots = _DOT_SEGMENT.search(value)
    if dots is not None:
        raise UnroutableAgentId(
            f"the agent id {value!r} has the path segment {dots.group(1)!r} (the id, or a part between its slashes, "
            "that is '.' or '..'), which URLs remove: no request could reach the agent, to deactivate it for one"
        )
    return value
