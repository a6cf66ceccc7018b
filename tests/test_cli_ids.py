"""Every id works as a command-line argument: new ones never begin with ``-``, old ones still parse."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlmodel import col
from typer.testing import CliRunner, Result

from memory_bank.cli import app
from memory_bank.security.principal import Principal
from memory_bank.settings import Settings
from memory_bank.store import open_database
from memory_bank.store.columns import ID_FIRST_LETTERS, command_line_safe, new_id
from memory_bank.store.database import transaction
from memory_bank.store.importer import copy_id
from memory_bank.store.tables import TokenRow
from memory_bank.store.tokens import TokenStore

#: The spec's ``MemoryId`` pattern.
ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{21}$")
ANY_ID = st.from_regex(ID_PATTERN, fullmatch=True)
DRAWS = 20_000


def run(cli: CliRunner, *args: str) -> Result:
    return cli.invoke(app, list(args), catch_exceptions=False)


def test_new_ids_match_the_spec_never_begin_with_a_dash_and_use_every_other_first_letter() -> None:
    ids = [new_id() for _ in range(DRAWS)]
    assert all(ID_PATTERN.match(i) for i in ids)
    assert not [i for i in ids if i.startswith("-")]
    # uniform over the 63 others: in 20 000 draws each appears (a miss has odds below 1e-130)
    assert {i[0] for i in ids} == set(ID_FIRST_LETTERS) and len(ID_FIRST_LETTERS) == 63
    assert any("-" in i[1:] for i in ids)  # the rest still uses all 64 letters


@given(org=st.text(max_size=30), user=st.text(max_size=30), original=ANY_ID)
@example(org="org12", user="ada", original="V1StGXR8_Z5jdHi6B-myT")  # its digest begins with "-"
def test_a_copied_record_gets_a_command_line_safe_id(org: str, user: str, original: str) -> None:
    # any stored ids, even ones no token could be minted for now (``check_owner_id``)
    principal = Principal(token_id="t", org_id=org, user_id=user, agent_id=None, permissions=frozenset())
    copied = copy_id(principal, original)
    assert ID_PATTERN.match(copied) and not copied.startswith("-")
    assert copied == copy_id(principal, original)  # stable, so a repeated import skips it


@given(candidate=ANY_ID)
def test_command_line_safe_changes_only_a_leading_dash(candidate: str) -> None:
    safe = command_line_safe(candidate)
    assert safe[1:] == candidate[1:] and not safe.startswith("-")
    assert safe == candidate or candidate.startswith("-")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(token_id=ANY_ID)
@example(token_id="-" + "h" * 20)
@example(token_id="--org" + "x" * 16)
def test_every_id_is_read_as_the_argument_of_revoke_and_deactivate(cli: CliRunner, token_id: str) -> None:
    """An unknown id is "not found" (exit 1), never a usage error (exit 2), whatever its letters."""
    revoked = run(cli, "token", "revoke", token_id)
    assert revoked.exit_code == 1 and f"no live token has the id {token_id}" in revoked.stderr
    deactivated = run(cli, "agent", "deactivate", token_id, "--org", "acme")
    assert deactivated.exit_code == 1 and f"no agent '{token_id}'" in deactivated.stderr


def test_a_token_whose_id_begins_with_a_dash_can_be_revoked(cli: CliRunner, database_url: str) -> None:
    """Ids minted before the change keep working: the id is the argument, not an unknown option."""
    tokens = TokenStore(open_database(Settings(database_url=database_url)))
    plaintext, row = tokens.create("acme", "ada", None, ["memory:read"])
    legacy = "-" + row.id[1:]
    with transaction(open_database(Settings(database_url=database_url)), write=True) as session:
        session.execute(sa.update(TokenRow).where(col(TokenRow.id) == row.id).values(id=legacy))

    assert legacy in run(cli, "token", "list").stdout
    result = run(cli, "token", "revoke", legacy)
    assert result.exit_code == 0 and f"Revoked {legacy}." in result.stderr
    assert tokens.verify(plaintext) is None


def test_revoke_still_offers_its_help(cli: CliRunner) -> None:
    result = run(cli, "token", "revoke", "--help")
    assert result.exit_code == 0 and "Usage:" in result.stdout


@pytest.mark.parametrize("command", ["revoke", "rotate"])
@pytest.mark.parametrize("token_id", ["\udcff", "\udced\udca0\udc80", "abc", "V1StGXR8_Z5jdHi6B-my\u00e9"])
def test_revoke_and_rotate_refuse_what_is_no_token_id(cli: CliRunner, command: str, token_id: str) -> None:
    """A non-UTF-8 argument (``$'\\xff'``, read as a lone surrogate) met the database's encoder
    with a traceback; text that is no generated id is a usage error before any query."""
    refused = run(cli, "token", command, token_id)
    assert refused.exit_code == 2 and not refused.stdout
    assert f"{token_id!r} is not a token id" in refused.stderr and "Traceback" not in refused.output
