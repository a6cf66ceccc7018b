"""JSON numbers as RFC 8259 has them: no ``NaN``, ``Infinity`` or ``-Infinity``, nothing past a double.

Python's and pydantic's parsers both take those tokens (and read ``1e400`` as infinity),
so a NaN reached a model and failed a bound, or passed where there was none, and came
back as ``null``. Every door refuses them where it parses a body instead, with this
one reason: REST and import as a body that is not JSON, MCP as a ``-32700``.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from typing import Any, NoReturn

NOT_FINITE = "NaN, Infinity and -Infinity are not JSON numbers (RFC 8259), nor is one past a double's range such as 1e400"


#: What half a surrogate pair is called, whichever half jiter names (it does not say which escape).
_UNPAIRED = "a string holds half a UTF-16 surrogate pair (an escape \\ud800 to \\udfff) without the other half (a pair: \\ud83d\\ude00)"
#: Parser faults (pydantic's jiter words them) put plainly: jiter calls a lone low
#: surrogate "leading" and a lone high one "unexpected end of hex escape".
_PLAIN_FAULTS = (
    ("surrogate", _UNPAIRED),
    ("end of hex escape", _UNPAIRED),
    ("recursion limit exceeded", "arrays and objects are nested deeper than the parser reads"),
    ("number out of range", "a number has more digits than the parser reads"),
)
_POSITION = re.compile(r" at line \d+ column \d+$")


def plain_fault(reason: str) -> str:
    """A parser's ``reason`` for refusing JSON, put plainly where its own words mislead (its
    position kept): ``lone leading surrogate in hex escape at line 1 column 19`` -> ``a string
    holds half a UTF-16 surrogate pair ... (at line 1 column 19)``."""
    for fault, plain in _PLAIN_FAULTS:
        if fault in reason:
            position = _POSITION.search(reason)
            return plain + ("" if position is None else f" ({position.group(0).strip()})")
    return reason


class NotStandardJson(ValueError):
    """A body or line the JSON grammar does not admit, or one this service does not read."""


class RepeatedKeys(ValueError):
    """An object names a key twice (``{"user_id": "a", "user_id": "b"}``): the models keep the
    last, a proxy, a log or a reviewer may read the first, so it is refused rather than read one way."""


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members = dict(pairs)
    if len(members) < len(pairs):
        repeated = sorted(key for key, count in Counter(key for key, _ in pairs).items() if count > 1)
        raise RepeatedKeys(f"the key(s) {', '.join(map(repr, repeated))} appear more than once in one object")
    return members


def _no_constant(name: str) -> NoReturn:
    raise NotStandardJson(NOT_FINITE)


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise NotStandardJson(NOT_FINITE)
    return number


def loads(text: str | bytes, *, unique_keys: bool = False) -> Any:
    """``json.loads`` refusing non-finite numbers (``NotStandardJson``) and, with ``unique_keys``,
    a key given twice in one object (``RepeatedKeys``); other faults are its ``ValueError``."""
    hook = _unique_members if unique_keys else None
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite, object_pairs_hook=hook)


def non_finite(value: Any) -> bool:
    """Whether an already parsed value holds a NaN or an infinity anywhere (what such a token parses to)."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(non_finite(member) for member in value.values())
    if isinstance(value, list):
        return any(non_finite(item) for item in value)
    return False
