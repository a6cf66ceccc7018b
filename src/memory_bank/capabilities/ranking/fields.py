"""What of a capability is searched, split into fields, and how much each field counts.

The weights start from what each field IS; where leave-one-source-out moved one, it
says so:

* ``name`` (operationId) and ``title`` (summary) are the author's own short statement
  of what the operation does: 3; the name 2 (moved), as it often only repeats the title.
* ``path``, the literal segments, names the resource acted on; ``tags`` name the
  resource group: 2.
* ``description`` is prose written for a reader, full of incidental words: 1.
* ``params`` (argument names) say what the operation needs, which a request often
  mentions ("for 2023", "by ICAO code"): 2 (moved); their descriptions, long and generic: 0.5.
* ``returns``: property names and descriptions of the response body, what the
  operation gives back; requests name it ("the calories of an apple", "its elevation"):
  0.5, as it is long and partly generic (ids, timestamps).
* ``phrases``: adjacent word pairs of name, title, description and path, matched
  against the request's own pairs, so order counts when the words are the same: 0.5
  (moved; the pair's words already count one by one).
* ``examples``: requests the spec's author says the operation answers
  (``x-capability.examples``), their words and adjacent pairs: document expansion, so a
  request phrased as agents phrase it meets an operation described as authors describe
  it: 1, like prose that is about the operation but written in many words.

How the weights were chosen, and why a ``verbs`` field (the HTTP method's words) went:
``docs/decisions/0013-capability-ranking-ablation.md``.

A description that only repeats the title (codegen copies the summary when there is
no description) is dropped so the title is not counted twice.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from memory_bank.textsearch.tokenize import identifier_terms, phrases

__all__ = ["FIELD_WEIGHTS", "api_terms", "fields", "response_words", "written_texts"]

FIELD_WEIGHTS: Mapping[str, float] = {
    "name": 2.0,
    "title": 3.0,
    "path": 2.0,
    "tags": 2.0,
    "description": 1.0,
    "params": 2.0,
    "param_text": 0.5,
    "returns": 0.5,
    "phrases": 0.5,
    "examples": 1.0,
}

#: How deep into nested response objects field names are still about the operation.
MAX_SCHEMA_DEPTH = 4
_SUBSCHEMA_KEYS = ("items", "additionalProperties", "allOf", "anyOf", "oneOf")

def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _tags(capability: Mapping[str, Any]) -> list[str]:
    return [t for t in capability.get("tags") or () if isinstance(t, str)]


def _arguments(capability: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """``(name, description)`` of every path/query/header argument and top-level body field."""
    groups = (capability.get("inputSchema") or {}).get("properties") or {}
    for group in groups.values():
        properties = group.get("properties") if isinstance(group, Mapping) else None
        for name, schema in (properties if isinstance(properties, Mapping) else {}).items():
            yield name, _text(schema.get("description")) if isinstance(schema, Mapping) else ""


def _schema_words(schema: Any, defs: Mapping[str, Any], depth: int = 0, seen: frozenset[str] = frozenset()) -> Iterator[str]:
    """Property names and descriptions of a JSON Schema, nested objects included, ``$ref``s
    into the root ``$defs`` followed once per branch (schemas may be cyclic)."""
    if isinstance(schema, list):
        for sub in schema:
            yield from _schema_words(sub, defs, depth, seen)
        return
    if not isinstance(schema, Mapping) or depth > MAX_SCHEMA_DEPTH:
        return
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and ref not in seen:
        yield from _schema_words(defs.get(ref.removeprefix("#/$defs/")), defs, depth, seen | {ref})
    properties = schema.get("properties")
    for name, sub in (properties.items() if isinstance(properties, Mapping) else ()):
        yield name
        if isinstance(sub, Mapping):
            yield _text(sub.get("description"))
        yield from _schema_words(sub, defs, depth + 1, seen)
    for key in _SUBSCHEMA_KEYS:
        yield from _schema_words(schema.get(key), defs, depth, seen)


def response_words(capability: Mapping[str, Any]) -> list[str]:
    """Field names and descriptions of what the operation returns (its ``outputSchema``)."""
    output = capability.get("outputSchema")
    return list(_schema_words(output, output.get("$defs") or {})) if isinstance(output, Mapping) else []


def _literal_path(path: str) -> str:
    """``/pets/{petId}/photos`` -> ``/pets//photos``: the resource words, not the placeholders
    (those are arguments and are indexed as such)."""
    out, depth = [], 0
    for char in path:
        depth += char == "{"
        out.append(char if depth == 0 else " ")
        depth -= char == "}" and depth > 0
    return "".join(out)


def fields(capability: Mapping[str, Any]) -> dict[str, list[str]]:
    """The capability's searchable text as ``{field: terms}`` (keys of :data:`FIELD_WEIGHTS`)."""
    title = _text(capability.get("title")).strip()
    examples = [identifier_terms(e) for e in capability.get("examples") or () if isinstance(e, str)]
    description = _text(capability.get("description")).strip()
    arguments = list(_arguments(capability))
    prose = {
        "name": identifier_terms(_text(capability.get("name"))),
        "title": identifier_terms(title),
        "path": identifier_terms(_literal_path(_text(capability.get("path")))),
        "description": identifier_terms(description) if description != title else [],
    }
    return prose | {
        "tags": identifier_terms(*_tags(capability)),
        "params": identifier_terms(*(name for name, _ in arguments)),
        "param_text": identifier_terms(*(text for _, text in arguments)),
        "returns": identifier_terms(*response_words(capability)),
        "phrases": [pair for words in prose.values() for pair in phrases(words)],
        "examples": [term for words in examples for term in (*words, *phrases(words))],
    }


def api_terms(capability: Mapping[str, Any]) -> list[str]:
    """The words that tell which API a capability belongs to: its source's name, title,
    tags and description.

    Pooled over all capabilities of one source they describe the API as a whole (every
    FruityVice operation talks about fruit), which routes a request to the right API
    before the operation's own fields pick the operation.
    """
    source = _text(capability.get("source")).rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return identifier_terms(source, _text(capability.get("title")), *_tags(capability), _text(capability.get("description")))


def written_texts(capability: Mapping[str, Any]) -> list[str]:
    """Every text of the capability that :func:`fields` indexes, as written (the words a
    request's misspelling is read against)."""
    arguments = list(_arguments(capability))
    return [
        _text(capability.get("name")),
        _text(capability.get("title")),
        _text(capability.get("path")),
        _text(capability.get("description")),
        *_tags(capability),
        *(name for name, _ in arguments),
        *(text for _, text in arguments),
        *response_words(capability),
        *(e for e in capability.get("examples") or () if isinstance(e, str)),
    ]
