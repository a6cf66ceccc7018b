"""Any OpenAPI 3.x spec -> a list of capabilities (one MCP-ready tool description per operation).

The catalog is what agents search and call, so it must hold for specs nobody here
wrote: operations without ids, names over MCP's 64-character limit, the same id in
two specs, 3.0 schema dialect. Every choice below is deterministic, so regenerating
from the same specs gives byte-identical output and a ``--check`` never flaps.

Each capability also carries ``examples`` (``x-capability.examples``: requests an agent
would make for it, empty when the spec gives none) and ``api``: what the spec says about the API as a whole
(``info`` title, summary, description; the servers' descriptions) and the
descriptions of the operation's own tags. Capability search uses it to tell which
API a request is for.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import PurePosixPath
from typing import Any

from memory_bank_codegen.loader import Operation, iter_operations, operation_parameters
from memory_bank_codegen.refs import deref
from memory_bank_codegen.schemas import RefIndex, to_json_schema

__all__ = ["Capability", "build_catalog", "build_catalogs", "tool_name"]

Capability = dict[str, Any]

#: MCP's tool-name rule: ``^[A-Za-z0-9_-]{1,64}$``.
MAX_NAME_LENGTH = 64
_VALID_NAME = re.compile(rf"^[A-Za-z0-9_-]{{1,{MAX_NAME_LENGTH}}}$")
_NAME_JUNK = re.compile(r"[^A-Za-z0-9_-]+")
_WORD = re.compile(r"[A-Za-z0-9]+")
_PATH_PIECE = re.compile(r"\{([^{}]*)\}|([^{}]+)")
_SPEC_SUFFIXES = (".json", ".yaml", ".yml")
#: Headers OpenAPI says are not parameters, and the one our principal comes from.
_IGNORED_HEADERS = frozenset({"authorization", "accept", "content-type"})
_GROUPS = ("path", "query", "header")
#: What a header value can carry as text: printable ASCII and spaces (RFC 9110 field-content
#: without tabs and the obsolete 8-bit range, which clients encode inconsistently).
HEADER_VALUE_PATTERN = "^[ -~]*$"
_READ_METHODS = frozenset({"get", "head"})
_IDEMPOTENT_METHODS = frozenset({"get", "head", "put", "delete"})
#: The permission area of operations that do not declare ``x-capability.permission``.
DEFAULT_AREA = "memory"


def tool_name(name: str) -> str:
    """Make ``name`` a valid MCP tool name; valid names pass through untouched.

    Over-long names keep a readable prefix plus a hash of the whole name, so two
    long names sharing a prefix still differ, and the result never changes.
    """
    if _VALID_NAME.match(name):
        return name
    clean = _NAME_JUNK.sub("_", name).strip("_") or "operation"
    if len(clean) <= MAX_NAME_LENGTH:
        return clean
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{clean[: MAX_NAME_LENGTH - len(digest) - 1]}_{digest}"


def _claim(name: str, taken: set[str]) -> str:
    """``name``, or ``name_2``, ``name_3``... whichever is free first; records it as taken."""
    candidate, n = tool_name(name), 1
    while candidate in taken:
        n += 1
        candidate = tool_name(f"{name}_{n}")
    taken.add(candidate)
    return candidate


def _path_parts(path: str) -> list[tuple[str, bool]]:
    """``/pets/{petId}.json`` -> ``[("/pets/", False), ("petId", True), (".json", False)]``."""
    return [(param or literal, bool(param)) for param, literal in _PATH_PIECE.findall(path)]


def _derived_name(op: Operation) -> str:
    """``GET /pets/{petId}`` -> ``getPetsByPetId``: stable, and reads like an operationId."""
    words = []
    for text, is_param in _path_parts(op.path):
        words += (["By"] if is_param else []) + [w[0].upper() + w[1:] for w in _WORD.findall(text)]
    return op.method + ("".join(words) or "Root")


def _derived_title(op: Operation) -> str:
    """``GET /pets/{petId}`` -> ``Get pets by petId``."""
    words = [f"by {text}" if is_param else text.replace("/", " ").strip() for text, is_param in _path_parts(op.path)]
    return " ".join([op.method.capitalize(), *filter(None, words)])


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _param_schema(param: dict[str, Any]) -> dict[str, Any]:
    """The parameter's schema (or its single ``content`` schema) with its description."""
    schema = param.get("schema")
    if not isinstance(schema, dict):
        content = param.get("content")
        media: Any = next(iter(content.values()), {}) if isinstance(content, dict) and content else {}
        schema = media.get("schema") if isinstance(media, dict) else None
    schema = dict(schema) if isinstance(schema, dict) else {}
    description = _text(param.get("description"))
    if description:
        schema["description"] = description
    return schema


def _header_value_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A header parameter's schema, also requiring a string to be sendable as a header value.

    A tool call's ``header`` group becomes real request headers, so a value no header can
    carry must fail the advertised schema (naming the argument) rather than the request.
    ``pattern`` constrains strings only; a pattern the spec already has is kept beside it.
    """
    if "pattern" not in schema:
        return {**schema, "pattern": HEADER_VALUE_PATTERN}
    if schema["pattern"] == HEADER_VALUE_PATTERN:  # the spec says it already
        return dict(schema)
    return {**schema, "allOf": [*schema.get("allOf", ()), {"pattern": HEADER_VALUE_PATTERN}]}


def _is_json(media_type: str) -> bool:
    base = media_type.split(";", 1)[0].strip().lower()
    return base in ("application/json", "text/json") or base.endswith("+json")


def _pick_media(content: Any, *, json_only: bool) -> tuple[str, dict[str, Any]] | None:
    """The first JSON media type of a ``content`` map, else (unless ``json_only``) the first one."""
    if not isinstance(content, dict):
        return None
    entries = [(k, v if isinstance(v, dict) else {}) for k, v in content.items()]
    return next((e for e in entries if _is_json(e[0])), None) or (None if json_only else next(iter(entries), None))


def _body(op: Operation, spec: dict[str, Any]) -> tuple[dict[str, Any], bool] | None:
    """The request body schema (raw OpenAPI) and whether the body is required."""
    body = deref(spec, op.operation.get("requestBody"))
    picked = _pick_media(body.get("content"), json_only=False) if body else None
    if body is None or picked is None:
        return None
    media_type, media = picked
    schema = media.get("schema")
    if not isinstance(schema, dict):
        schema = {} if _is_json(media_type) else {"type": "string"}
    return schema, body.get("required") is True


def _input_schema(op: Operation, spec: dict[str, Any], refs: RefIndex) -> dict[str, Any]:
    """One strict object with a group per parameter location, plus ``body``.

    The groups are assembled as an OpenAPI schema first and converted in one go, so
    cyclic ``$defs`` from any group land at the root where ``#/$defs/...`` resolves.
    """
    groups: dict[str, dict[str, Any]] = {}
    for param in operation_parameters(op, spec):
        where, name = param["in"], param["name"]
        if where not in _GROUPS or (where == "header" and name.lower() in _IGNORED_HEADERS):
            continue
        group = groups.setdefault(where, {"type": "object", "additionalProperties": False, "properties": {}, "required": []})
        schema = _param_schema(param)
        group["properties"][name] = _header_value_schema(schema) if where == "header" else schema
        if where == "path" or param.get("required") is True:
            group["required"].append(name)
    properties = {where: groups[where] for where in _GROUPS if where in groups}
    body = _body(op, spec)
    if body:
        properties["body"] = body[0]
    root = to_json_schema(
        {"type": "object", "additionalProperties": False, "properties": properties, "required": []}, spec, refs=refs
    )
    converted = root["properties"]
    root["required"] = [g for g in converted if converted[g].get("required")]
    if body and body[1] and "body" not in root["required"]:
        root["required"].append("body")
    return root


def _output_schema(op: Operation, spec: dict[str, Any], refs: RefIndex) -> dict[str, Any] | None:
    """The first 2xx JSON response body; MCP wants an object, so anything else goes under ``result``."""
    responses = op.operation.get("responses")
    for code, response in (responses.items() if isinstance(responses, dict) else ()):
        if not str(code).startswith("2"):
            continue
        picked = _pick_media((deref(spec, response) or {}).get("content"), json_only=True)
        if picked is None:
            continue
        schema = to_json_schema(picked[1].get("schema") or {}, spec, refs=refs)
        if schema.get("type") == "object":
            return schema
        defs = schema.pop("$defs", None)
        wrapped: dict[str, Any] = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
        return {**wrapped, "$defs": defs} if defs else wrapped
    return None


def _policy(op: Operation, tags: list[str], default_expose: bool) -> dict[str, Any]:
    declared = op.operation.get("x-capability")
    declared = declared if isinstance(declared, dict) else {}
    access = "read" if op.method in _READ_METHODS else "write"
    return {
        "category": _text(declared.get("category")) or (tags[0] if tags else "General"),
        "permission": _text(declared.get("permission")) or f"{DEFAULT_AREA}:{access}",
        "expose": bool(declared["expose"]) if "expose" in declared else default_expose,
    }


def _examples(operation: dict[str, Any]) -> list[str]:
    """``x-capability.examples``: requests an agent would make for the operation, in the
    spec author's words. Search indexes them as a field of their own (document expansion),
    so the author, not the ranker's word lists, says which requests the operation answers.
    Anything but a non-empty string is dropped (third-party specs are not linted)."""
    declared = operation.get("x-capability")
    examples = declared.get("examples") if isinstance(declared, dict) else None
    return [e.strip() for e in examples if isinstance(e, str) and e.strip()] if isinstance(examples, list) else []


def _api_info(spec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """What the spec says about the API as a whole, and each tag's description.

    ``{"title", "summary", "description", "servers"}`` from ``info`` and the servers'
    descriptions (empty strings and lists when absent), then ``{tag: description}`` for
    the tags that have one. Search uses this text to tell which API a request is for.
    """
    info, servers, tags = spec.get("info"), spec.get("servers"), spec.get("tags")
    info = info if isinstance(info, dict) else {}
    servers = servers if isinstance(servers, list) else []
    tags = tags if isinstance(tags, list) else []
    server_texts = [_text(s.get("description")) for s in servers if isinstance(s, dict)]
    api = {
        "title": _text(info.get("title")),
        "summary": _text(info.get("summary")),
        "description": _text(info.get("description")),
        "servers": list(dict.fromkeys(t for t in server_texts if t)),
    }
    described = {t["name"]: _text(t.get("description")) for t in tags if isinstance(t, dict) and isinstance(t.get("name"), str)}
    return api, {name: text for name, text in described.items() if text}


def _capability(
    op: Operation,
    spec: dict[str, Any],
    refs: RefIndex,
    source: str,
    default_expose: bool,
    api: tuple[dict[str, Any], dict[str, str]],
) -> Capability:
    operation = op.operation
    raw_tags = operation.get("tags")
    tags = [t for t in raw_tags if isinstance(t, str)] if isinstance(raw_tags, list) else []
    operation_id = _text(operation.get("operationId"))
    summary = _text(operation.get("summary"))
    return {
        "name": tool_name(operation_id or _derived_name(op)),
        "title": summary or _derived_title(op),
        "description": _text(operation.get("description")) or summary,
        "method": op.method.upper(),
        "path": op.path,
        "tags": tags,
        "examples": _examples(operation),
        "inputSchema": _input_schema(op, spec, refs),
        "outputSchema": _output_schema(op, spec, refs),
        "annotations": {
            "readOnlyHint": op.method in _READ_METHODS,
            "destructiveHint": op.method == "delete",
            "idempotentHint": op.method in _IDEMPOTENT_METHODS,
            "openWorldHint": False,
        },
        "policy": _policy(op, tags, default_expose),
        "source": source,
        # A copy per capability (no aliasing between entries); ``tags``: this operation's only.
        "api": {**api[0], "servers": list(api[0]["servers"]), "tags": {t: api[1][t] for t in tags if t in api[1]}},
    }


def build_catalog(spec: dict[str, Any], *, source: str = "", default_expose: bool = False, every: bool = False) -> list[Capability]:
    """The exposed capabilities of one spec, in path then method order, names unique.

    ``x-capability.expose`` decides; operations without it use ``default_expose``
    (False for our specs: nothing is a tool unless the spec says so; True to load a
    third-party spec whole). A name repeated inside the spec gets ``_2``, ``_3``...
    ``every`` keeps the operations that are not exposed too (``policy.expose`` false): the
    registry ranks them beside the rest, so a request for one finds no tool that looks sure.
    """
    refs = RefIndex(spec)
    api = _api_info(spec)
    taken: set[str] = set()
    catalog = []
    for op in iter_operations(spec):
        capability = _capability(op, spec, refs, source, default_expose, api)
        if every or capability["policy"]["expose"]:
            capability["name"] = _claim(capability["name"], taken)
            catalog.append(capability)
    return catalog


def _source_slug(source: str) -> str:
    """``../specs/twilio_api_v2010.json`` -> ``twilio_api_v2010``."""
    name = PurePosixPath(source.replace("\\", "/")).name
    for suffix in _SPEC_SUFFIXES:
        name = name.removesuffix(suffix)
    return _NAME_JUNK.sub("_", name).strip("_") or "spec"


def build_catalogs(
    specs: list[tuple[str, dict[str, Any]]], *, default_expose: bool = False, every: bool = False
) -> list[Capability]:
    """Many ``(source, spec)`` pairs in one registry, names unique across all of them (``every``: as in :func:`build_catalog`).

    The first spec to use a name keeps it (so adding a spec never renames the tools
    of the ones before it); a later one becomes ``<source slug>__<name>``.
    """
    taken: set[str] = set()
    merged = []
    for source, spec in specs:
        for capability in build_catalog(spec, source=source, default_expose=default_expose, every=every):
            name = capability["name"]
            capability["name"] = _claim(f"{_source_slug(source)}__{name}" if name in taken else name, taken)
            merged.append(capability)
    return merged
