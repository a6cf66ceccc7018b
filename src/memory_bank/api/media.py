"""Media types at the HTTP edge: what a body's ``Content-Type`` names and what an ``Accept`` takes.

Both are case-insensitive and may carry parameters (RFC 9110 §8.3.1), so a type is
compared by its essence, ``type/subtype`` in lower case. In ``Accept`` a weight of
``q=0`` means "not acceptable" (§12.4.2), and the most specific range that matches a
type decides its weight (§12.5.1): ``application/json;q=0, */*`` refuses JSON.
"""

from __future__ import annotations

import re

JSON = "application/json"

#: A weight: RFC 9110 §12.4.2 writes 0 to 1 with three decimals at most, but a decimal past
#: that (``0.0000``, ``-1``, ``1.5``) still says what its sender meant and is read clamped to
#: 0..1, as werkzeug reads it; what is no decimal (``abc``, ``nan``, ``"0"``) is no weight (1).
_DECIMAL = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)$")


def essence(media_type: str) -> str:
    """``Application/JSON; charset=UTF-8`` -> ``application/json``."""
    return media_type.partition(";")[0].strip().lower()


#: ``application/json`` or ``application/<name>+json``, the name a token (RFC 9110 §5.6.2) and not
#: empty: a suffix names the syntax of a subtype (RFC 6838 §4.2.8), so ``+json`` alone names none.
_JSON_ESSENCE = re.compile(r"^application/(?:[!#$%&'*+.^_`|~0-9a-z-]*[!#$%&'*.^_`|~0-9a-z-]\+)?json$")


def is_json(media_type: str) -> bool:
    """``application/json`` or a JSON-suffixed ``application/*+json`` (RFC 6839), such as a problem."""
    return _JSON_ESSENCE.match(essence(media_type)) is not None


def _weighted_ranges(accept: str) -> list[tuple[str, float]]:
    """Each media range of an ``Accept`` value with its weight."""
    ranges = []
    for element in accept.split(","):
        media_range, *parameters = (part.strip() for part in element.split(";"))
        if not media_range:
            continue
        weight = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q" and _DECIMAL.match(value.strip()):
                weight = min(max(float(value), 0.0), 1.0)
        ranges.append((media_range.lower(), weight))
    return ranges


def accepts(accept: str, media_type: str) -> bool:
    """Whether an ``Accept`` value takes ``media_type`` (an essence): its most specific matching range has q > 0."""
    kind = essence(media_type)
    top = kind.partition("/")[0]
    specificity = {kind: 3, f"{top}/*": 2, "*/*": 1}
    matching = [(specificity[r], weight) for r, weight in _weighted_ranges(accept) if r in specificity]
    if not matching:
        return False
    most_specific = max(rank for rank, _ in matching)
    return max(weight for rank, weight in matching if rank == most_specific) > 0
