"""The one configuration object, read from ``MEMORY_BANK_*`` environment variables.

Every tunable lives here so that an operator can see the whole surface in one place;
modules receive a ``Settings`` instance instead of reading the environment.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import json
from collections.abc import Mapping
from enum import StrEnum
from functools import cache, lru_cache, partial
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from platformdirs import user_data_path
from pydantic import AfterValidator, Field, Strict, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from memory_bank.did_you_mean import closest
from memory_bank.owner_ids import check_owner_id

ENV_PREFIX = "MEMORY_BANK_"
#: Variables the test suite reads (``MEMORY_BANK_TEST_MYSQL_URL``...), not the service: never "unknown".
TEST_PREFIX = f"{ENV_PREFIX}TEST_"
#: The folder under the user's data directory (XDG on Linux) that holds the embedded database.
APP_DIRECTORY = "memory-bank"
DEFAULT_PUBLIC_URL = "http://127.0.0.1:8000"
#: Settings whose value may carry a password or a token: never echoed back in an error.
SECRET_FIELDS = frozenset({"database_url", "redis_url", "token", "public_url"})
#: The databases the store runs on: backend -> (SQLAlchemy driver, its module, the extra that installs it).
DATABASE_DRIVERS = {
    "sqlite": ("pysqlite", "sqlite3", None),
    "mysql": ("mysqldb", "MySQLdb", "mysql"),
    "mariadb": ("mysqldb", "MySQLdb", "mysql"),
}
DATABASE_URL_FORMS = "sqlite:///path/to/file.db or mysql+mysqldb://user@host/db"


#: An org's budget of requests a minute, for every org or for one (``rate_limit_org_overrides``).
RequestsPerMinute = Annotated[int, Field(ge=1)]
#: An org id as a token can carry it (``check_owner_id``): an override for ``"acme "`` would limit no org.
OrgId = Annotated[str, AfterValidator(partial(check_owner_id, "org"))]


class Profile(StrEnum):
    """Deployment profile; staging and production fail closed where development fails open."""

    development = "development"
    staging = "staging"
    production = "production"


class McpToolsMode(StrEnum):
    """Which tools the MCP server lists: the two meta-tools, one tool per operation, or both."""

    meta = "meta"
    direct = "direct"
    both = "both"


def default_database_url() -> str:
    """The embedded SQLite file in the user's data directory: the same file for every command,
    whichever folder it runs from (a relative path would give each folder its own database)."""
    return f"sqlite:///{user_data_path(APP_DIRECTORY, appauthor=False, ensure_exists=True) / 'memory-bank.db'}"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    env: Profile = Profile.development
    database_url: str = Field(default_factory=default_database_url)
    redis_url: str | None = None
    #: MySQL/MariaDB: how long a connect, a lock wait or a read of the server's answer may take
    #: before the request fails with 503; a database that stops answering hung every request.
    database_timeout_seconds: int = Field(default=10, ge=1, le=3600)
    #: ``serve``: how long a request's head may take to arrive whole, its body may pause, and
    #: its client may read none of the answer (api.unparsed); uvicorn alone waits for ever,
    #: and silent connections pile up.
    request_timeout_seconds: float = Field(default=20, gt=0, le=3600)
    rate_limit_rpm: RequestsPerMinute = 120
    #: Read as JSON by the validator below, so that bad JSON is a field error like any other. Strict:
    #: JSON's ``true`` is no budget (lax, pydantic reads it as 1), nor are ``"5"`` and ``5.0``.
    rate_limit_org_overrides: Annotated[dict[OrgId, Annotated[RequestsPerMinute, Strict()]], NoDecode] = Field(default_factory=dict)
    #: Socket timeouts for Redis: a limiter that stalls would stall every request. At most an hour,
    #: as the database's: redis-py's ``socket.settimeout`` overflows on ``inf`` or 1e10, failing every request.
    redis_timeout_seconds: float = Field(default=0.25, gt=0, le=3600)
    audit_queue_size: int = Field(default=10_000, ge=1)
    audit_batch_size: int = Field(default=500, ge=1)
    #: Also append audit events as JSON lines to this file (the table always gets them).
    audit_jsonl_path: Path | None = None
    mcp_tools: McpToolsMode = McpToolsMode.meta
    mcp_allow_stdio: bool = False
    token: str | None = None
    #: Unset, ``serve`` derives it from the address it binds (``bound_to``).
    public_url: str = DEFAULT_PUBLIC_URL
    #: Memory search also by local embeddings (needs the ``semantic`` extra; store.search.semantic).
    semantic_search: bool = False
    #: The authorization server whose JWT access tokens are accepted beside ``mb_`` tokens
    #: (its RFC 8414 or OpenID metadata and JWKS are fetched from it); unset, none are.
    oauth_issuer: str | None = None
    #: The signature algorithms a JWT may use: asymmetric only (``none`` and HS* are refused,
    #: since an HMAC "signed" with the published key would verify).
    oauth_algorithms: Annotated[list[str], NoDecode] = Field(default_factory=lambda: ["RS256", "ES256"])
    #: The claims that name the principal's user, org and (optionally) agent.
    oauth_user_claim: str = "sub"
    oauth_org_claim: str = "org_id"
    oauth_agent_claim: str = "agent_id"
    #: Clock skew tolerated on ``exp``/``nbf``/``iat``.
    oauth_leeway_seconds: int = Field(default=30, ge=0, le=300)
    #: An unknown ``kid`` refetches the JWKS at most this often, so a flood of made-up kids
    #: cannot hammer the authorization server.
    oauth_jwks_refresh_seconds: float = Field(default=30, ge=0)
    #: The ``typ`` headers that mark a JWT as an access token (RFC 9068: ``at+jwt``), so that an
    #: ID token or another JWT the issuer signs for this audience is not taken for one. Some
    #: providers label access tokens ``JWT``; their operators add it here.
    oauth_token_types: Annotated[list[str], NoDecode] = Field(default_factory=lambda: ["at+jwt"])
    #: Capability search fuses in the same model (capabilities.ranking.semantic): the hybrid.
    semantic_capabilities: bool = False
    #: MiB of vectors one process keeps for semantic search on MariaDB/MySQL (store.search.vector_cache).
    vector_cache_mb: int = Field(default=256, ge=1)

    #: MiB of per-owner postings one process keeps for lexical memory search (store.search.postings);
    #: 0 keeps none (every search reads the owner's rows).
    lexical_cache_mb: int = Field(default=256, ge=0)

    @property
    def vector_cache_bytes(self) -> int:
        return self.vector_cache_mb * 2**20

    @property
    def lexical_cache_bytes(self) -> int:
        return self.lexical_cache_mb * 2**20

    @field_validator("database_url")
    @classmethod
    def _is_a_url(cls, value: str) -> str:
        try:
            url = make_url(value)
        except ArgumentError:
            raise ValueError(f"not a SQLAlchemy URL (e.g. {DATABASE_URL_FORMS})") from None
        if url.get_backend_name() not in DATABASE_DRIVERS:
            raise ValueError(f"the {url.get_backend_name()!r} database is not supported; use {DATABASE_URL_FORMS}")
        driver, module, extra = DATABASE_DRIVERS[url.get_backend_name()]
        if url.get_driver_name() != driver:
            raise ValueError(f"the {url.get_driver_name()!r} driver is not supported; use {DATABASE_URL_FORMS}")
        if extra and importlib.util.find_spec(module) is None:  # the extra a first try forgets
            raise ValueError(f"{url.get_backend_name()} needs the {extra} extra: pip install -e '.[{extra}]'")
        return value

    @field_validator("redis_url")
    @classmethod
    def _is_a_redis_url(cls, value: str | None) -> str | None:
        if value is not None and urlsplit(value).scheme not in ("redis", "rediss", "unix"):
            raise ValueError("not a Redis URL (redis://host:6379/0, rediss://host:6380/0 or unix:///path/to/redis.sock)")
        return value

    @field_validator("public_url")
    @classmethod
    def _is_a_public_url(cls, value: str) -> str:
        """What ``mcp.origins`` compares ``Host`` and ``Origin`` with: a scheme, a host and a port."""
        try:
            parts = urlsplit(value.rstrip("/"))
            parts.port  # noqa: B018 - raises for a port that is not a number or out of range
        except ValueError:
            raise ValueError("its host or port cannot be read (e.g. https://memory.example.com or http://[::1]:8000)") from None
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.netloc.endswith(":"):
            raise ValueError("not an http(s) URL with a host (the address clients reach this service at, e.g. https://memory.example.com)")
        if parts.username is not None or parts.password is not None or parts.path or parts.query or parts.fragment:
            raise ValueError("only scheme://host[:port]: no user, path, query or fragment (the service is served at the root)")
        return value

    @field_validator("rate_limit_org_overrides", mode="before")
    @classmethod
    def _from_json(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            raise ValueError('not JSON; expected an object of org id to requests per minute, e.g. {"acme": 600}') from None

    @field_validator("oauth_issuer")
    @classmethod
    def _issuer_is_a_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("https://", "http://")):
            raise ValueError("not an http(s) URL (the authorization server's issuer, e.g. https://auth.example.com)")
        return value

    @field_validator("oauth_algorithms", mode="before")
    @classmethod
    def _algorithms(cls, value: Any) -> Any:
        names = _comma_separated(value)
        if isinstance(names, list):
            accepted = asymmetric_algorithms()
            refused = [repr(name) if name else "an empty item" for name in names if name not in accepted]
            if refused or not names:
                raise ValueError(
                    f"a comma-separated list of asymmetric JWS algorithms, each one of {', '.join(accepted)} "
                    f"(e.g. RS256,ES256); refused: {', '.join(refused) or 'an empty list'}"
                )
        return names

    @field_validator("oauth_token_types", mode="before")
    @classmethod
    def _token_types(cls, value: Any) -> Any:
        """Compared as RFC 7515 says ``typ`` is: without case and without ``application/``."""
        names = _comma_separated(value)
        if isinstance(names, list):
            if not names or not all(isinstance(name, str) and name for name in names):
                raise ValueError("a comma-separated list of JWT typ values without empty items, e.g. at+jwt or at+jwt,JWT")
            names = [jwt_type(name) for name in names]
        return names

    @property
    def protected(self) -> bool:
        """True in the profiles that must fail closed rather than degrade."""
        return self.env is not Profile.development

    @property
    def database(self) -> URL:
        """The database URL parsed (checked by the validator above), for its backend and parts."""
        return make_url(self.database_url)

    def bound_to(self, host: str, port: int) -> Settings:
        """These settings for a server listening on ``host:port``: unless ``MEMORY_BANK_PUBLIC_URL``
        says otherwise, clients are told the address it binds (a wildcard as the loopback)."""
        if "public_url" in self.model_fields_set:
            return self
        return self.model_copy(update={"public_url": f"http://{_reachable(host)}:{port}"})


def _comma_separated(value: Any) -> Any:
    """A setting's comma-separated text as its stripped items (blank: none; a blank item
    between commas stays, for the validator to name as a slip); any other value as it is."""
    if not isinstance(value, str):
        return value
    return [part.strip() for part in value.split(",")] if value.strip() else []


@cache
def asymmetric_algorithms() -> tuple[str, ...]:
    """The JWS algorithms an access token may be signed with: the public-key ones of joserfc,
    which verifies them, by their exact names (it knows no ``rs256``). Read only when a value is
    checked: importing joserfc costs every command's start about 0.1 s."""
    from joserfc.jws import JWSRegistry

    return tuple(sorted(name for name, algorithm in JWSRegistry.algorithms.items() if algorithm.key_type != "oct"))


def jwt_type(typ: str) -> str:
    """A JWT ``typ`` as compared (RFC 7515 4.1.9): lower case, ``application/`` dropped."""
    return typ.lower().removeprefix("application/")


def _reachable(host: str) -> str:
    """The host part of a URL that reaches a server bound to ``host`` from this machine."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host  # a name
    if address.is_unspecified:
        address = ipaddress.ip_address("::1" if address.version == 6 else "127.0.0.1")
    return f"[{address}]" if address.version == 6 else str(address)


def start_refusals(settings: Settings) -> list[str]:
    """Why a staging or production server must not start, one line per variable.

    A protected profile runs replicas: on SQLite each would keep its own data, and with no
    Redis each would count an org's requests alone (two replicas admit twice the budget).
    An authorization server reached over plain HTTP could have its keys swapped on the way,
    and then any token would verify.
    """
    if not settings.protected:
        return []
    refusals = []
    if settings.database.get_backend_name() == "sqlite":
        refusals.append(
            f"{ENV_PREFIX}DATABASE_URL: {settings.env} needs a MySQL/MariaDB database shared by every replica "
            "(mysql+mysqldb://user@host/db), not SQLite"
        )
    if not settings.redis_url:
        refusals.append(
            f"{ENV_PREFIX}REDIS_URL: {settings.env} needs Redis (redis://host:6379/0) so that replicas share "
            "one rate limit; it is unset"
        )
    if settings.oauth_issuer and not settings.oauth_issuer.startswith("https://"):
        refusals.append(
            f"{ENV_PREFIX}OAUTH_ISSUER: {settings.env} needs an https:// authorization server, whose keys "
            f"cannot be swapped in transit; it is {settings.oauth_issuer}"
        )
    return refusals


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """One line per ``MEMORY_BANK_*`` variable that names no setting, with the setting it likely misspells.

    pydantic-settings skips such a variable without a word, so a misspelt
    ``MEMORY_BANK_DATABSE_URL`` would quietly leave every write in the default SQLite file.
    They are told, not refused: a variable left over from another version must not stop a start.
    """
    known = sorted(name.upper() for name in Settings.model_fields)
    read = {name.lower() for name in Settings.model_fields}
    lines = []
    for variable in sorted(environ):
        # Folded as pydantic-settings folds it, with ``str.lower``: ``upper`` would take a name
        # it skips (``RATE_L\u0131MIT_RPM``, a dotless i) for a setting, and one it reads
        # (``TO\u212aEN``, a Kelvin sign) for none.
        folded = variable.lower()
        name = folded.removeprefix(ENV_PREFIX.lower())
        if name != folded and not folded.startswith(TEST_PREFIX.lower()) and name not in read:
            likely = closest(name.upper(), known)  # without the prefix, which every name shares
            lines.append(f"{variable} is not a setting, so it is ignored" + (f": did you mean {ENV_PREFIX}{likely}?" if likely else ""))
    return lines


def setting_errors(error: ValidationError) -> list[str]:
    """One line per bad variable, naming it, what it was (quoted, unless secret) and what it must be."""
    lines: dict[str, str] = {}
    for detail in error.errors():
        field, *inner = [str(part) for part in detail["loc"]] or [""]
        variable = f"{ENV_PREFIX}{field.upper()}"
        if variable in lines:
            continue  # a union reports each of its arms; the first says enough
        # The input is the variable's value only at the top; inside it (an override) the place says which.
        shown = "" if field in SECRET_FIELDS or inner or not isinstance(detail["input"], str) else f"={detail['input']!r}"
        # e.g. the org of an override, quoted as ids are; not for a key, which the message names
        where = "" if inner[-1:] == ["[key]"] else "".join(f"{part!r}: " for part in inner)
        message = str(detail["msg"]).removeprefix("Value error, ")
        lines[variable] = f"{variable}{shown}: {where}{message}"
    return list(lines.values())


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment."""
    return Settings()
