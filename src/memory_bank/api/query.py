"""The rule FastAPI does not enforce: a query or header parameter the spec declares single-valued comes once.

Starlette keeps every value of a repeated key and FastAPI hands a scalar parameter the
last one, so ``?limit=5&limit=500`` used to mean ``limit=500`` and ``?limit=500&limit=5``
``limit=5``: two readings of one request, and a proxy or a log that kept the first value
would disagree with the service. The generated routes ask ``checked_query`` (after the
principal, so a bad token is still 401 first) for the names of their parameters that
are not arrays; an array (``tags``) is repeated by design. It refuses a name the operation
does not declare as well, as an unknown body field is refused: FastAPI ignores one. A
header such as ``Idempotency-Key`` is the same case: FastAPI hands a scalar ``Header`` the first of two
copies, so two keys on one write were one reading here and perhaps another at a proxy.

The other: a query integer, number or boolean comes in the form the spec's serialization has.
pydantic's lax parsing read ``limit=+5``, ``limit= 5``, ``limit=5_0``, ``min_score=1_0``
(as 10), ``min_score=nan`` and ``include_schema=yes`` (or ``on``, ``1``, ``True``); OpenAPI
writes an integer as digits with an optional minus, a number as JSON does and a boolean as
``true`` or ``false``, and a client that sent another form works here and nowhere else.
The generated routes type such parameters ``QueryInt``, ``QueryNumber`` and ``QueryBool``;
MCP arguments arrive typed (JSON) and are spelled in these forms when dispatched
(``capabilities.execute.dispatch``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Annotated
from urllib.parse import unquote_to_bytes

from fastapi import Request
from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

from memory_bank.api.bodies import not_utf8
from memory_bank.api.problems import validation_error
from memory_bank.did_you_mean import closest
from memory_bank.errors import FieldError


def checked_query(*names: str, repeatable: tuple[str, ...] = (), headers: tuple[str, ...] = ()) -> Callable[[Request], None]:
    """A dependency refusing, 422 ``invalid_params``, a request that gives a query parameter the
    operation does not declare (``names``, in the spec's order: a misspelt ``?query=`` read as no
    query, and the search answered every memory at score 1), or a query parameter of ``names``
    not in ``repeatable``, or any header of ``headers`` (matched case-insensitively, named as
    the spec spells it), more than once."""
    known = list(names)
    declared = frozenset(names) - frozenset(repeatable)

    def check(request: Request) -> None:
        undecodable = _not_utf8(request.scope.get("query_string", b""))
        if undecodable:
            raise validation_error(undecodable)
        given_keys = [key for key, _ in request.query_params.multi_items()]
        errors = [
            FieldError(f"/query/{key}", "additionalProperties", f"is not a parameter of this operation{_hint(key, known)}")
            for key in dict.fromkeys(given_keys)
            if key not in known
        ]
        counts = Counter(key for key in given_keys if key in declared)
        given = [("query", name, counts[name]) for name in names if name in declared]
        given += [("header", name, len(request.headers.getlist(name))) for name in headers]
        errors += [FieldError(f"/{place}/{name}", "type", f"given {n} times; it takes one value") for place, name, n in given if n > 1]
        if errors:
            raise validation_error(errors)

    return check


#: What a query parameter whose percent-decoded bytes are not UTF-8 is told to do.
_SEND_UTF8 = " once percent-decoded; percent-encode the text's UTF-8 bytes (e.g. %C3%A9 for é)"


def _not_utf8(query_string: bytes) -> list[FieldError]:
    """The parameters of a query string whose name or value, percent-decoded, is not UTF-8.

    Starlette reads such bytes as U+FFFD, so ``?q=%FF%FE`` searched for two replacement
    characters and answered 200, where a body of the same bytes is refused (``api.bodies``).
    A name that is not UTF-8 cannot be named back: its failure is at ``/query``.
    """
    errors = []
    for pair in query_string.split(b"&"):
        name, _, value = (unquote_to_bytes(part.replace(b"+", b" ")) for part in pair.partition(b"="))
        try:
            key = name.decode("utf-8")
        except UnicodeDecodeError as exc:
            errors.append(not_utf8("/query", exc, f" in a parameter's name{_SEND_UTF8}"))
            continue
        try:
            value.decode("utf-8")
        except UnicodeDecodeError as exc:
            errors.append(not_utf8(f"/query/{key}", exc, _SEND_UTF8))
    return errors


def _hint(key: str, known: list[str]) -> str:
    close = closest(key, known)
    if close is not None:
        return f"; did you mean {close}?"
    return f"; it takes {', '.join(known)}" if known else "; it takes none"


_INTEGER = re.compile(r"-?[0-9]+")
#: JSON's number, but with leading zeros as for integers (``05``): what an encoder writes for a float.
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
#: The most significant digits pydantic reads as an integer; past them it names its own limit.
_MOST_DIGITS = 4300


def _integer_form(value: object) -> object:
    """A query string value is an integer only as ``-?[0-9]+``; pydantic then reads it (and the bounds apply).

    Digits past what pydantic reads are an integer too, beyond every bound of the specs: they
    fail ``maximum`` (``minimum`` with a minus) like twenty digits do, where pydantic's
    ``int_parsing_size`` reached the caller as the rule.
    """
    if not isinstance(value, str):
        return value
    if not _INTEGER.fullmatch(value):
        raise PydanticCustomError("int_parsing", "an integer is written as digits with an optional leading minus, e.g. 5")
    if len(value.lstrip("-").lstrip("0")) > _MOST_DIGITS:
        negative = value.startswith("-")
        raise PydanticCustomError(
            "greater_than_equal" if negative else "less_than_equal",
            f"an integer of more than {_MOST_DIGITS} digits is out of range",
        )
    return value


def _number_form(value: object) -> object:
    """A query string value is a number only as JSON writes one (no ``1_0``, `` 1``, ``nan``, ``inf``)."""
    if isinstance(value, str) and not _NUMBER.fullmatch(value):
        raise PydanticCustomError("float_parsing", "a number is written as JSON writes one, e.g. 0.5 or 1e-3")
    return value


def _boolean_form(value: object) -> object:
    """A query string value is a boolean only as ``true`` or ``false``."""
    if isinstance(value, str) and value not in ("true", "false"):
        raise PydanticCustomError("bool_parsing", "a boolean is written true or false")
    return value


#: The query parameter types of the generated routes for the spec's ``integer``, ``number`` and ``boolean``.
QueryInt = Annotated[int, BeforeValidator(_integer_form)]
QueryNumber = Annotated[float, BeforeValidator(_number_form)]
QueryBool = Annotated[bool, BeforeValidator(_boolean_form)]
