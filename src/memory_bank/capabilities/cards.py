"""Compact capability cards: what an agent reads to pick a tool.

A full input schema costs hundreds of tokens per operation; an agent choosing among
many needs only the name, a one-line summary, the permission and which arguments
it cannot leave out. The schema is added on request, for the one it picks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from memory_bank.generated import models

Capability = Mapping[str, Any]

#: A sentence ends at ., ! or ? followed by whitespace (so `v1.2` and `e.g.x` stay whole).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def summary(capability: Capability) -> str:
    """The description's first sentence, on one line; the title when there is no description."""
    text = " ".join(str(capability.get("description") or "").split())
    return _SENTENCE_END.split(text, maxsplit=1)[0] if text else str(capability.get("title") or "")


def required_arguments(input_schema: Mapping[str, Any]) -> list[str]:
    """``["path.memory_id", "body.content"]``: the arguments a call cannot leave out.

    A required group with no required member of its own (a PATCH body where any
    field will do) is named by itself, e.g. ``body``.
    """
    groups = input_schema.get("properties") or {}
    names: list[str] = []
    for group in input_schema.get("required") or ():
        members = (groups.get(group) or {}).get("required") or ()
        names += [f"{group}.{member}" for member in members] or [group]
    return names


def card(capability: Capability, score: float | None, *, include_schema: bool = False) -> models.CapabilityCard:
    """One capability as a card; ``score`` is None when it was listed rather than ranked."""
    policy = capability["policy"]
    return models.CapabilityCard(
        name=capability["name"],
        title=capability["title"],
        summary=summary(capability),
        category=policy["category"],
        permission=policy["permission"],
        score=None if score is None else round(score, 4),
        required=required_arguments(capability["inputSchema"]),
        inputSchema=dict(capability["inputSchema"]) if include_schema else None,
    )


def cards_text(result: models.CapabilitySearchResult, confident: float) -> str:
    """``result`` as the text an agent reads when its client shows only text: one line per
    card with its title instead of the summary, not the structured content's JSON again
    (which would double the cost of every search). A schema asked for is appended as JSON.
    ``confident``: the confidence below which the agent should compare several cards.
    No card is said as such: "by category", the header of a listing, would read as if
    the catalog were empty rather than as a request that matched nothing. A best fit the
    caller may not call over MCP (``withheld``) is said first."""
    said = _withheld_text(result.withheld) if result.withheld else None
    if not result.results:
        found = f"matches (0 of {result.total}); an empty query without a category lists them all."
        return f"{said}.\nNo other operation {found}" if said else f"No operation {found}"
    lead = f"{said}; none of these does what was asked.\n" if said else ""
    ranked = any(c.score is not None for c in result.results)
    order = f"best first, confidence {result.confidence} (compare several cards when it is under {confident})" if ranked else "by category"
    lines = [lead + f"{len(result.results)} of {result.total} operations, {order}:"]
    for card in result.results:
        score = "" if card.score is None else f", score {card.score}"
        lines.append(f"- {card.name}: {card.title} ({card.permission}{score}; requires {', '.join(card.required) or 'nothing'})")
        if card.inputSchema is not None:
            lines.append("  inputSchema: " + json.dumps(card.inputSchema, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(lines)


def _withheld_text(withheld: models.CapabilitySearchResultWithheld) -> str:
    if withheld.reason == "not_exposed":
        return f"The best fit, {withheld.name}, is not offered over MCP, only over HTTP at {withheld.route} (with {withheld.permission})"
    return f"The best fit, {withheld.name}, needs {withheld.permission}, which this token lacks"
