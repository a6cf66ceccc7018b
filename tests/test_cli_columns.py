"""``memory-bank search`` and ``token list`` in an 80-column terminal: nothing past the edge,
ids whole on one line, permissions never broken, the content's words all there."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from memory_bank.cli import app
from memory_bank.cli.console import owner
from memory_bank.cli.search import CONTENT_PREVIEW, MIN_MEMORY_WIDTH
from memory_bank.security.tokens import PERMISSIONS
from memory_bank.settings import get_settings
from memory_bank.store import MemoryStore, open_database
from memory_bank.store.keyset import every_page
from memory_bank.store.tokens import TokenStore

COLUMNS = 80
HYPOTHESIS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
#: Words a cell can hold whole (a longer one must be broken at any width).
WORD = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789"), min_size=1, max_size=MIN_MEMORY_WIDTH - 2)
NAME = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz-._"), min_size=1, max_size=16)
KEYPATH = st.from_regex(r"[a-z0-9_-]{1,8}(\.[a-z0-9_-]{1,8}){0,2}", fullmatch=True)
CELL = re.compile(r"│([^│]*)")


@pytest.fixture
def terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[CliRunner]:
    monkeypatch.setenv("MEMORY_BANK_DATABASE_URL", f"sqlite:///{tmp_path / 'memory-bank.db'}")
    get_settings.cache_clear()
    yield CliRunner()
    get_settings.cache_clear()


def run(terminal: CliRunner, *args: str) -> Result:
    result = terminal.invoke(app, list(args), env={"COLUMNS": str(COLUMNS)}, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    assert max(len(line) for line in result.stdout.splitlines()) <= COLUMNS
    return result


def column(output: str, index: int) -> list[str]:
    """The stripped text of one column of a boxed table, line by line, rules and headers left out."""
    return [cells[index].strip() for line in output.splitlines() if len(cells := CELL.findall(line)) > index]


@HYPOTHESIS
@given(words=st.lists(WORD, min_size=1, max_size=40), tags=st.lists(NAME, max_size=4, unique=True), keypath=KEYPATH)
def test_search_at_80_columns_shows_the_content_whole_and_the_id_on_one_line(
    terminal: CliRunner, words: list[str], tags: list[str], keypath: str
) -> None:
    user = uuid.uuid4().hex  # each example its own owner, on the same database
    content = " ".join(["needle", *words])
    row, _ = MemoryStore(open_database(get_settings())).create(owner("acme", user), {"content": content, "tags": tags, "keypath": keypath})
    output = run(terminal, "search", "needle", "--org", "acme", "--user", user).stdout

    assert row.id in column(output, 2)
    shown = " ".join(column(output, 1))
    preview = content if len(content) <= CONTENT_PREVIEW else content[: CONTENT_PREVIEW - 1].rsplit(" ", 1)[0] + "…"
    assert shown.startswith(preview)
    assert all(f"#{tag}" in shown for tag in tags) and keypath in shown


@HYPOTHESIS
@given(org=NAME, user=NAME, agent=st.none() | NAME, granted=st.sets(st.sampled_from(sorted(PERMISSIONS)), min_size=1))
def test_token_list_at_80_columns_keeps_ids_names_and_permissions_whole(
    terminal: CliRunner, org: str, user: str, agent: str | None, granted: set[str]
) -> None:
    _, token = TokenStore(open_database(get_settings())).create(org, user, agent, sorted(granted))
    output = run(terminal, "token", "list", "--revoked").stdout
    ids, names, permissions = column(output, 0), column(output, 1), column(output, 2)
    first = ids.index(token.id)  # the id whole, on its row's first line
    assert ids[first + 1] == f"{token.prefix}…"  # then the prefix that tells it apart
    tokens = TokenStore(open_database(get_settings()))
    listed = {row.id for row in every_page(partial(tokens.page, None, revoked=True, limit=100))}
    end = next((i for i in range(first + 1, len(ids)) if ids[i] in listed), len(ids))
    assert [name for name in names[first:end] if name] == [org, user, *([agent] if agent else [])]
    assert {p for p in permissions[first:end] if p} == granted
