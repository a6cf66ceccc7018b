"""The operator commands on a real SQLite file: export/import, search, token list/revoke, and their errors.

Output discipline is part of the contract: results on stdout, progress and errors on
stderr, failures as ``error (<code>): <plain words>`` with exit code 1 and no traceback.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from memory_bank.cli import app
from memory_bank.cli.console import owner
from memory_bank.settings import get_settings
from memory_bank.store import MemoryStore, open_database
from memory_bank.store.agents import AgentStore
from memory_bank.store.filters import MemoryFilter
from memory_bank.store.search import semantic
from memory_bank.store.tokens import TokenStore
from support import backends
from support.requirements import semantic_extra
from support.transfer import exported_rows

Run = Callable[..., Result]
COMMANDS = [[], ["export"], ["import"], ["search"], ["token"], ["token", "list"], ["token", "revoke"], ["token", "rotate"], ["agent", "reactivate"], ["db", "embed"]]


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Run]:
    """``run(*args)``: the CLI against a fresh database, stdout and stderr kept apart."""
    monkeypatch.setenv("MEMORY_BANK_DATABASE_URL", f"sqlite:///{tmp_path / 'memory-bank.db'}")
    monkeypatch.setenv("COLUMNS", "200")
    get_settings.cache_clear()
    runner = CliRunner()

    def invoke(*args: str) -> Result:
        return runner.invoke(app, list(args), catch_exceptions=False)

    yield invoke
    get_settings.cache_clear()


@pytest.fixture
def store(run: Run) -> MemoryStore:
    """The store on the test database (``run`` comes first: it points the settings there)."""
    return MemoryStore(open_database(get_settings()))


def save(store: MemoryStore, org: str, user: str, content: str, **fields: object) -> str:
    row, _ = store.create(owner(org, user), {"content": content, **fields})
    return row.id


def assert_fails(result: Result, code: str, words: str) -> None:
    assert result.exit_code == 1 and result.stdout == ""
    assert f"error ({code}):" in result.stderr and words in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "top")
def test_every_command_has_help(run: Run, command: list[str]) -> None:
    result = run(*command, "--help")
    assert result.exit_code == 0 and "Usage:" in result.stdout and "--help" in result.stdout


def test_export_then_import_into_another_user_round_trips_versions_and_tags(run: Run, store: MemoryStore, tmp_path: Path) -> None:
    first = save(store, "acme", "ada", "The deploy target is a Daytona sandbox", tags=["deploy"], contexts=[{"snippet": "ops"}])
    store.patch(owner("acme", "ada"), first, {"content": "The deploy target is a Daytona sandbox in eu-west"})
    save(store, "acme", "ada", "Ada prefers vim", keypath="user.editor")
    save(store, "acme", "bob", "Bob's memory stays out of Ada's export")
    out = tmp_path / "ada.jsonl"

    exported = run("export", "--out", str(out), "--org", "acme", "--user", "ada")
    assert exported.exit_code == 0 and exported.stdout.strip() == f"exported 3 memories to {out}"
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [m["version"] for m in lines] == [1, 2, 1] and "Bob" not in out.read_text()
    assert not out.with_name("ada.jsonl.partial").exists()

    imported = run("import", str(out), "--org", "globex", "--user", "cy")
    assert imported.exit_code == 0 and imported.stdout.strip() == "imported 3, skipped 0 already present"
    again = run("import", str(out), "--org", "acme", "--user", "ada")
    assert again.stdout.strip() == "imported 0, skipped 3 already present"

    found = run("search", "daytona sandbox", "--org", "globex", "--user", "cy")
    assert found.exit_code == 0 and "eu-west" in found.stdout and "Ada prefers vim" not in found.stdout


def test_an_import_with_a_bad_line_writes_nothing_and_names_the_line(run: Run, store: MemoryStore, tmp_path: Path) -> None:
    save(store, "acme", "ada", "A good memory")
    good = tmp_path / "good.jsonl"
    run("export", "--out", str(good), "--org", "acme", "--user", "ada")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good.read_text() + "this is not json\n")

    result = run("import", str(bad), "--org", "acme", "--user", "bob")
    assert_fails(result, "invalid_params", "nothing was imported")
    assert "line 2: " in result.stderr and "/body" not in result.stderr
    assert store.search(owner("acme", "bob"), MemoryFilter(), None, 10) == []


def test_a_backup_holding_line_separators_restores_and_keeps_only_the_orgs_agents(run: Run, store: MemoryStore, tmp_path: Path) -> None:
    """U+2028/U+2029/U+0085 in a memory, even a deleted one, no longer make a backup unrestorable."""
    TokenStore(open_database(get_settings())).create("globex", "someone", "helper", ["memory:read"])  # registers "helper" in globex
    save(store, "acme", "ada", "line\u2028separator", agent_id="helper")
    gone = save(store, "acme", "ada", "paragraph\u2029separator\u0085next line", agent_id="ghost")
    store.delete(owner("acme", "ada"), gone)
    out = tmp_path / "ada.jsonl"
    assert run("export", "--out", str(out), "--org", "acme", "--user", "ada").exit_code == 0
    assert len(out.read_text(encoding="utf-8").splitlines()) == 2

    imported = run("import", str(out), "--org", "globex", "--user", "cy")
    assert imported.exit_code == 0 and imported.stdout.strip() == "imported 2, skipped 0 already present"
    restored = {row.content: row.agent_id for row in exported_rows(store, owner("globex", "cy"), 10)}
    assert restored == {"line\u2028separator": "helper", "paragraph\u2029separator\u0085next line": None}


def test_import_refuses_a_file_that_is_not_utf8(run: Run, tmp_path: Path) -> None:
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00")
    assert_fails(run("import", str(binary), "--org", "a", "--user", "b"), "invalid_params", "not UTF-8")


def test_a_missing_import_file_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    result = run("import", str(tmp_path / "missing.jsonl"), "--org", "a", "--user", "b")
    assert result.exit_code == 2 and "does not exist" in result.stderr


def test_an_export_that_cannot_be_written_leaves_no_file(run: Run, tmp_path: Path) -> None:
    target = tmp_path / "no-such-dir" / "out.jsonl"
    assert_fails(run("export", "--out", str(target), "--org", "a", "--user", "b"), "invalid_params", "No such file")
    assert not target.parent.exists()


def test_an_export_to_stdout_writes_the_lines_there_and_the_summary_to_stderr(run: Run, store: MemoryStore) -> None:
    save(store, "acme", "ada", "Straight to the pipe ☕")
    exported = run("export", "--out", "-", "--org", "acme", "--user", "ada")
    assert exported.exit_code == 0, exported.stderr
    assert [json.loads(line)["content"] for line in exported.stdout.splitlines()] == ["Straight to the pipe ☕"]
    assert "exported 1 memories to -" in exported.stderr


def test_an_export_through_a_symlink_keeps_the_link_and_writes_its_target(run: Run, store: MemoryStore, tmp_path: Path) -> None:
    """A rename onto the link's name would put a regular file in its place: for ``/dev/stdout``, for every later process."""
    save(store, "acme", "ada", "Through the link")
    device, to_file = tmp_path / "to-null", tmp_path / "to-file"
    device.symlink_to(os.devnull)
    (tmp_path / "backup.jsonl").write_text("old\n")
    to_file.symlink_to(tmp_path / "backup.jsonl")
    for link in (device, to_file):
        assert run("export", "--out", str(link), "--org", "acme", "--user", "ada").exit_code == 0
        assert link.is_symlink()
    assert json.loads((tmp_path / "backup.jsonl").read_text())["content"] == "Through the link"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")) == []


def test_search_prints_a_ranked_table_and_says_when_nothing_matches(run: Run, store: MemoryStore) -> None:
    saved = save(store, "acme", "ada", "Deploy with daytona sandbox create", tags=["deploy"])
    save(store, "acme", "ada", "Lunch is at noon")

    result = run("search", "daytona deploy", "--org", "acme", "--user", "ada")
    assert result.exit_code == 0
    assert "score" in result.stdout and saved in result.stdout and "Lunch" not in result.stdout

    nothing = run("search", "kubernetes", "--org", "acme", "--user", "ada")
    assert nothing.exit_code == 0 and nothing.stdout == "" and "No memory of ada in acme matches" in nothing.stderr
    assert_fails(run("search", "   ", "--org", "acme", "--user", "ada"), "invalid_params", "1 to 2000 characters")


def test_db_embed_gives_old_memories_vectors_and_semantic_search_finds_them(
    run: Run, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    semantic_extra()
    puppy = save(store, "acme", "ada", "We adopted a puppy last spring")  # saved while semantic search was off
    save(store, "acme", "ada", "The quarterly budget review is on Friday")
    first = run("db", "embed")
    assert first.exit_code == 0 and first.stdout.strip() == "2"
    assert run("db", "embed").stdout.strip() == "0"  # nothing left to do
    monkeypatch.setenv("MEMORY_BANK_SEMANTIC_SEARCH", "true")
    get_settings.cache_clear()
    found = run("search", "dog", "--org", "acme", "--user", "ada")
    rows = [line for line in found.stdout.splitlines() if "│" in line]  # the table's rows, best first
    assert found.exit_code == 0 and puppy in rows[0]


def test_an_import_with_semantic_search_on_stores_vectors(run: Run, store: MemoryStore, tmp_path: Path, monkeypatch) -> None:
    semantic_extra()
    save(store, "acme", "ada", "We adopted a puppy last spring")
    out = tmp_path / "ada.jsonl"
    run("export", "--out", str(out), "--org", "acme", "--user", "ada")
    monkeypatch.setenv("MEMORY_BANK_SEMANTIC_SEARCH", "true")
    get_settings.cache_clear()
    assert run("import", str(out), "--org", "acme", "--user", "cy").exit_code == 0
    found = run("search", "dog", "--org", "acme", "--user", "cy")
    assert found.exit_code == 0 and "puppy" in found.stdout


def test_db_embed_without_the_semantic_extra_says_how_to_install_it_from_the_checkout(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(semantic, "load_embedder", lambda: None)
    result = run("db", "embed")
    # a usage error (test_cli_settings); the install hint's [semantic] is printed as text, not swallowed as console markup
    assert result.exit_code == 2 and result.stdout == "" and "pip install -e '.[semantic]'" in result.stderr
    flat = " ".join(result.stderr.split())
    assert semantic.INSTALL_SEMANTIC in flat and "download.pytorch.org/whl/cpu" in flat
    assert "memory-bank[semantic]" not in flat  # that name on the package index is another project


def test_token_list_shows_live_tokens_and_revoke_stops_one(run: Run) -> None:
    tokens = TokenStore(open_database(get_settings()))
    plaintext, ada = tokens.create("acme", "ada", "laptop", ["memory:read"])
    _, bob = tokens.create("globex", "bob", None, ["memory:write"])

    listed = run("token", "list")
    assert ada.id in listed.stdout and bob.id in listed.stdout and plaintext not in listed.stdout
    assert bob.id not in run("token", "list", "--org", "acme").stdout

    revoked = run("token", "revoke", ada.id)
    assert revoked.exit_code == 0 and tokens.verify(plaintext) is None
    assert ada.id not in run("token", "list").stdout and ada.id in run("token", "list", "--revoked").stdout
    assert_fails(run("token", "revoke", ada.id), "not_found", f"no live token has the id {ada.id}")


#: Every command group's commands that open the database, with the arguments they need.
DATABASE_COMMANDS = [
    ["token", "list"],
    ["token", "create", "--org", "acme", "--user", "ada", "--permissions", "memory:read"],
    ["token", "revoke", "V1StGXR8_Z5jdHi6B-myT"],
    ["token", "rotate", "V1StGXR8_Z5jdHi6B-myT"],
    ["agent", "list", "--org", "acme"],
    ["agent", "create", "--org", "acme", "--name", "laptop"],
    ["agent", "deactivate", "laptop"],
    ["agent", "reactivate", "laptop"],
    ["db", "upgrade"],
    ["search", "hello", "--org", "acme", "--user", "ada"],
    ["export", "--org", "acme", "--user", "ada", "--out", "out.jsonl"],
]


def closed_mysql_port() -> str:
    pytest.importorskip("MySQLdb", reason="mysqlclient is not installed")
    return f"mysql+mysqldb://root@127.0.0.1:{backends.free_port()}/memory_bank"


@pytest.mark.parametrize("command", DATABASE_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("url", [lambda: "sqlite:////no/such/dir/memory-bank.db", closed_mysql_port], ids=["sqlite-no-dir", "mysql-closed-port"])
def test_an_unreachable_database_is_reported_with_its_code(
    run: Run, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, command: list[str], url: Callable[[], str]
) -> None:
    """One line and exit 1 from every command, not only from those that once wrapped their work:
    ``token create`` and the agent commands printed an OperationalError's traceback."""
    monkeypatch.setenv("MEMORY_BANK_DATABASE_URL", url())
    monkeypatch.chdir(tmp_path)
    get_settings.cache_clear()
    assert_fails(run(*command), "backend_unavailable", "the database is unreachable")


def test_token_create_names_the_token_prints_its_id_and_expires_it(run: Run) -> None:
    created = run("token", "create", "--org", "acme", "--user", "ada", "--permissions", "memory:admin", "--name", "first admin", "--expires-in", "30d")
    assert created.exit_code == 0, created.output
    secret = created.stdout.strip()
    assert secret.startswith("mb_") and "\n" not in secret
    token_id = created.stderr.split("id ", 1)[1].split()[0]
    row = TokenStore(open_database(get_settings())).find(token_id)
    assert row is not None and row.name == "first admin" and row.prefix == secret[:9]
    assert row.expires_at is not None and timedelta(days=29, hours=23) < row.expires_at - datetime.now(UTC) <= timedelta(days=30)
    listed = run("token", "list").stdout
    assert token_id in listed and f"{row.prefix}…" in listed and "first admin" in listed and "expires" in listed

    bad = run("token", "create", "--org", "acme", "--user", "ada", "--permissions", "memory:read", "--expires-in", "30 days")
    assert bad.exit_code == 2 and "not a duration such as 30d" in bad.stderr


def test_token_create_refuses_a_lifetime_longer_than_the_api_grants(run: Run) -> None:
    """``999999w`` overflowed the date with a traceback; the API caps ``expires_in_seconds`` at ten years."""
    mint = ["token", "create", "--org", "acme", "--user", "ada", "--permissions", "memory:read", "--expires-in"]
    assert run(*mint, "3650d").exit_code == 0
    for too_long in ["3651d", "999999w", "999999d"]:
        refused = run(*mint, too_long)
        assert refused.exit_code == 2 and not refused.stdout and "Traceback" not in refused.output
        assert "longer than a token may live (at most 3650d)" in " ".join(refused.stderr.replace("│", " ").split())


@pytest.mark.parametrize("command", [["token", "create", "--user", "ada", "--permissions", "memory:read"], ["agent", "create"]])
@pytest.mark.parametrize("name", ["\u200b", "evil\u202etxt", "two\u2028lines", " padded"])
def test_a_name_the_admin_api_refuses_is_refused_on_the_command_line_too(run: Run, command: list[str], name: str) -> None:
    """``token list`` and ``agent list`` print names to the operator's terminal, whichever door wrote them."""
    refused = run(*command, "--org", "acme", "--name", name)
    assert refused.exit_code == 2 and "--name must start with a visible character" in refused.stderr, refused.output


def test_token_rotate_prints_a_new_secret_and_the_old_one_stops_working(run: Run) -> None:
    tokens = TokenStore(open_database(get_settings()))
    old, row = tokens.create("acme", "ada", None, ["memory:read"])
    rotated = run("token", "rotate", row.id)
    assert rotated.exit_code == 0, rotated.output
    new = rotated.stdout.strip()
    assert tokens.verify(old) is None and tokens.verify(new) is not None and tokens.verify(new).token_id == row.id  # type: ignore[union-attr]
    run("token", "revoke", row.id)
    assert_fails(run("token", "rotate", row.id), "not_found", f"no live token has the id {row.id}")


def test_agent_reactivate_lets_a_deactivated_agent_write_again(run: Run) -> None:
    agents = AgentStore(open_database(get_settings()))
    agent = agents.create("acme", "laptop")
    assert run("agent", "deactivate", agent.id).exit_code == 0
    assert agents.find("acme", agent.id).active is False  # type: ignore[union-attr]
    reactivated = run("agent", "reactivate", agent.id, "--org", "acme")
    assert reactivated.exit_code == 0 and "reactivated" in reactivated.stderr
    assert agents.find("acme", agent.id).active is True  # type: ignore[union-attr]
    assert run("agent", "reactivate", "nobody", "--org", "acme").exit_code == 1


def test_token_create_refuses_a_repeated_permission(run: Run) -> None:
    repeated = run("token", "create", "--org", "acme", "--user", "ada", "--permissions", "memory:read,memory:read")
    assert repeated.exit_code == 2 and "given more than once: memory:read" in repeated.stderr and not repeated.stdout


@pytest.mark.parametrize("permissions", ["", ",", " , ,"])
def test_token_create_refuses_an_empty_permission_list(run: Run, permissions: str) -> None:
    empty = run("token", "create", "--org", "acme", "--user", "ada", "--permissions", permissions)
    assert empty.exit_code == 2 and "--permissions names no permission" in empty.stderr and not empty.stdout
    assert "memory:read" in empty.stderr  # what to give instead
    assert "No live tokens" in run("token", "list").stderr


@pytest.mark.parametrize(("option", "kind"), [("--user", "user"), ("--agent", "agent"), ("--org", "org")])
@pytest.mark.parametrize("value", ["c\u200bi", "ci\U000e0001", "ｃｉ"])
def test_token_create_refuses_an_id_with_an_invisible_or_lookalike_character(run: Run, option: str, kind: str, value: str) -> None:
    options = {"--org": "acme", "--user": "ada", "--agent": "laptop", option: value}
    made = run("token", "create", *[part for pair in options.items() for part in pair], "--permissions", "memory:read")
    assert made.exit_code == 2 and f"the {kind} id" in made.stderr and not made.stdout
    assert "No live tokens" in run("token", "list").stderr


def test_agent_deactivate_refuses_an_id_with_an_invisible_character(run: Run) -> None:
    refused = run("agent", "deactivate", "lap\u200btop")
    assert refused.exit_code == 2 and "U+200B" in refused.stderr


def test_token_rotate_refuses_an_expired_token(run: Run) -> None:
    tokens = TokenStore(open_database(get_settings()))
    _, row = tokens.create("acme", "ada", None, ["memory:read"], expires_at=datetime.now(UTC) - timedelta(minutes=1))
    assert_fails(run("token", "rotate", row.id), "conflict", "create a new token instead")


def test_token_list_prints_names_and_ids_as_text_not_markup(run: Run) -> None:
    """``[b]`` in an org would list ``ac[b]me`` as ``acme``; ``[conceal]`` in a name would hide what follows."""
    tokens = TokenStore(open_database(get_settings()))
    tokens.create("ac[b]me", "ada", None, ["memory:read"], name="[conceal]hidden[/conceal] shown")
    listed = run("token", "list").stdout
    assert "ac[b]me" in listed and "[conceal]hidden[/conceal]" in listed
