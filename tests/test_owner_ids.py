"""Owner ids are refused where they are minted unless they compare alike on every backend.

MariaDB compares VARCHARs with PAD SPACE, even under ``utf8mb4_bin``: a token minted for
org ``"acme "`` read and changed org ``acme``'s memories there, while on SQLite it saw an
empty org. Ids with surrounding whitespace, control characters, no characters or more
than the column holds are therefore refused by the token store, the agent store and the
CLI, on both backends; so are invisible characters and text not in NFKC form, with which
two ids that list alike would be two owners.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.owner_ids import takes_owner_id
from typer.testing import CliRunner

from memory_bank.cli import app
from memory_bank.generated.spec import SPEC
from memory_bank.owner_ids import MAX_OWNER_ID_LENGTH, check_owner_id
from memory_bank.settings import Settings
from memory_bank.store import open_database
from memory_bank.store.agents import AgentStore
from memory_bank.store.tokens import TokenStore

BAD_IDS = ["acme ", " acme", "acme\t", "acme\n", "", "a\x00b", "a\x7fb", "a" * (MAX_OWNER_ID_LENGTH + 1), "\u00a0acme"]


@pytest.fixture
def tokens(database_url: str) -> Iterator[TokenStore]:
    engine = open_database(Settings(database_url=database_url))
    yield TokenStore(engine)
    engine.dispose()


@pytest.mark.parametrize("bad", BAD_IDS)
def test_a_token_for_a_padded_or_blank_owner_id_is_refused(tokens: TokenStore, bad: str) -> None:
    for org, user, agent in ((bad, "ann", None), ("acme", bad, None), ("acme", "ann", bad)):
        with pytest.raises(ValueError, match=r"the (org|user|agent) id"):
            tokens.create(org, user, agent, ["memory:read"])
    assert tokens.count() == 0


def test_a_padded_org_cannot_share_another_orgs_memories(client, make_client, make_token) -> None:
    """The attack the check closes, end to end: on MariaDB ``acme `` used to read ``acme``."""
    ann = make_client("acme", "ann")
    memory = ann.post("/v1/memory", json={"content": "acme's org-wide secret", "scope": "org"}).json()
    with pytest.raises(ValueError):
        make_token("acme ", "mallory")
    other = make_client("acmf", "mallory")
    assert other.get(f"/v1/memory/{memory['id']}").status_code == 404


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(core=st.text(min_size=1, max_size=20).filter(lambda s: s == s.strip()), pad=st.sampled_from([" ", "\t", "\u3000", "\n"]))
def test_every_id_with_surrounding_whitespace_is_refused(core: str, pad: str) -> None:
    for padded in (core + pad, pad + core):
        with pytest.raises(ValueError):
            check_owner_id("org", padded)


@pytest.mark.parametrize("good", ["acme", "ann@example.com", "Ünïcödé org", "a" * MAX_OWNER_ID_LENGTH, "team a:b/c"])
def test_ordinary_ids_are_kept(tokens: TokenStore, good: str) -> None:
    plaintext, row = tokens.create(good, good, good, ["memory:read"])
    principal = tokens.verify(plaintext)
    assert principal is not None and (principal.org_id, principal.user_id, principal.agent_id) == (good, good, good)


@pytest.mark.parametrize(
    "args",
    [
        ["token", "create", "--org", "acme ", "--user", "ann", "--permissions", "memory:read"],
        ["token", "create", "--org", "acme", "--user", "", "--permissions", "memory:read"],
        ["agent", "create", "--org", " acme", "--name", "laptop"],
        ["export", "--out", "out.jsonl", "--org", "acme ", "--user", "ann"],
    ],
)
def test_the_cli_refuses_padded_ids_in_one_line(cli: CliRunner, args: list[str]) -> None:
    result = cli.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert "Traceback" not in result.output and " id" in result.output


def test_an_agent_for_a_padded_org_is_refused(database_url: str) -> None:
    engine = open_database(Settings(database_url=database_url))
    try:
        with pytest.raises(ValueError, match="org id"):
            AgentStore(engine).create("acme ", "laptop")
    finally:
        engine.dispose()


def test_a_padded_agent_id_in_a_body_is_not_the_agent(make_client, make_token) -> None:
    """An agent-less token naming ``agent_id: "<agent> "``: on MariaDB it used to pass as ``<agent>``
    and store the padded id; now it is an unregistered agent on both backends."""
    make_token("acme", "ann")  # registers agent-1 in acme
    agentless = make_client("acme", "ann", agent=None)
    padded = agentless.post("/v1/memory", json={"content": "padded agent", "agent_id": "agent-1 "})
    assert padded.status_code == 403 and padded.json()["code"] == "permission_denied"
    exact = agentless.post("/v1/memory", json={"content": "exact agent", "agent_id": "agent-1"})
    assert exact.status_code == 201 and exact.json()["agent_id"] == "agent-1"


@pytest.mark.parametrize("path", ["/v1/memory", "/v1/memory/search"])
def test_a_project_filter_matches_only_that_project(make_client, path: str) -> None:
    """On MariaDB ``project_id=p`` also returned project ``p `` (PAD SPACE); SQLite did not."""
    ann = make_client("acme", "ann")
    projects = ["p", "p ", "p  ", "P", "p%", "p_", "p/"]
    for project in projects:
        assert ann.post("/v1/memory", json={"content": f"in project [{project}]", "project_id": project}).status_code == 201
    for project in projects:
        reply = ann.get(path, params={"project_id": project}).json()
        found = [m["project_id"] for m in reply.get("items", reply.get("results", []))]
        assert found == [project], (project, found)


# Invisible and lookalike characters: the spec's pattern and ``check_owner_id`` agree (what
# the pattern refuses the check refuses too, so a client validating against the spec is
# never told yes where the server says no), and an accepted id shows every character it has.

PATTERN = re.compile(SPEC["components"]["schemas"]["OwnerId"]["pattern"])
#: Text weighted towards the characters an attacker would pick.
TRICKY = st.text(
    st.one_of(
        st.characters(codec="utf-8"),
        st.characters(categories=["Cf", "Zs", "Zl", "Zp", "Mn", "Cc"]),
        st.sampled_from("\u3164\u115f\uffa0\u034f\ufe0f\u2800 a\u00e9e\u0301"),
    ),
    min_size=1,
    max_size=12,
)


@given(TRICKY)
@example("a\U000e0001")
@example("ci runner")
def test_the_check_never_accepts_what_the_pattern_refuses(value: str) -> None:
    if takes_owner_id(value):
        assert PATTERN.fullmatch(value), f"{value!r} passes the check but not the spec"


@given(TRICKY)
@example("\u200b")
@example("a\u00a0b")
def test_an_accepted_id_has_no_invisible_character_and_is_nfkc(value: str) -> None:
    if takes_owner_id(value):
        assert unicodedata.normalize("NFKC", value) == value
        assert all(unicodedata.category(c)[0] not in "CZ" or c == " " for c in value)
