"""Owner ids: the spec's pattern and ``check_owner_id`` agree, and no accepted id hides a character.

Properties over any text (hypothesis), no database: what the pattern refuses the check
refuses too (a client validating against the spec is never told yes where the server
says no), and an id the check accepts shows every character it has.
"""

from __future__ import annotations

import re
import unicodedata

from hypothesis import example, given
from hypothesis import strategies as st

from memory_bank.generated.spec import SPEC
from memory_bank.security.principal import check_owner_id

PATTERN = re.compile(SPEC["components"]["schemas"]["OwnerId"]["pattern"])
#: Text weighted towards the characters an attacker would pick.
TRICKY = st.text(
    st.one_of(
        st.characters(codec="utf-8"),
        st.characters(categories=["Cf", "Zs", "Zl", "Zp", "Mn", "Cc"]),
        st.sampled_from("\u3164\u115f\uffa0\u034f\ufe0f\u2800 a\u00e9e\u0301"),
    ),
    min_size=1,
    max_size=12,
)


def accepted(value: str) -> bool:
    try:
        check_owner_id("user", value)
    except ValueError:
        return False
    return True


@given(TRICKY)
@example("a\U000e0001")
@example("ci runner")
def test_the_check_never_accepts_what_the_pattern_refuses(value: str) -> None:
    if accepted(value):
        assert PATTERN.fullmatch(value), f"{value!r} passes the check but not the spec"


@given(TRICKY)
@example("\u200b")
@example("a\u00a0b")
def test_an_accepted_id_has_no_invisible_character_and_is_nfkc(value: str) -> None:
    if accepted(value):
        assert unicodedata.normalize("NFKC", value) == value
        assert all(unicodedata.category(c)[0] not in "CZ" or c == " " for c in value)
