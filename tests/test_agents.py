"""Agent resolution (DESIGN §6) on a real SQLite database, and the ``agent`` CLI."""

from __future__ import annotations

from functools import partial

import pytest
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from memory_bank.cli import app as cli
from memory_bank.errors import DomainError, ErrorCode
from memory_bank.observability import audit
from memory_bank.security.agents import NO_AGENT, UNREGISTERED_HINT, AgentResolver
from memory_bank.settings import Settings, get_settings
from memory_bank.store.agents import AgentStore
from memory_bank.store.database import transaction
from memory_bank.store.keyset import every_page
from memory_bank.store.tables import AgentRow
from memory_bank.store.tokens import TokenStore


def in_org(agents: AgentStore, org: str) -> list[AgentRow]:
    """Every agent of ``org``, through the store's paging."""
    return list(every_page(partial(agents.page, org, limit=2)))


@pytest.fixture
def agents(engine: Engine) -> AgentStore:
    return AgentStore(engine)


@pytest.fixture
def resolver(agents: AgentStore) -> AgentResolver:
    return AgentResolver(agents, audit.attribute_agent)


async def denied(resolver: AgentResolver, principal, requested: str | None) -> str:
    with pytest.raises(DomainError) as caught:
        await resolver.resolve_agent(principal, requested)
    assert caught.value.code is ErrorCode.permission_denied
    return caught.value.detail


async def test_the_tokens_agent_wins_over_the_requested_one(agents, resolver, make_principal) -> None:
    bound, named = agents.create("acme", "laptop"), agents.create("acme", "ci")
    assert await resolver.resolve_agent(make_principal(agent=bound.id), named.id) == bound.id


async def test_an_agentless_token_may_name_a_registered_agent(agents, resolver, make_principal) -> None:
    named = agents.create("acme", "ci")
    assert await resolver.resolve_agent(make_principal(), named.id) == named.id


async def test_no_agent_at_all_fails_closed(resolver, make_principal) -> None:
    assert await denied(resolver, make_principal(), None) == NO_AGENT


async def test_missing_inactive_and_cross_org_agents_are_denied(agents, resolver, make_principal) -> None:
    retired, foreign = agents.create("acme", "old"), agents.create("globex", "theirs")
    agents.deactivate(retired.id)

    assert "not registered" in await denied(resolver, make_principal(), "ghost")
    assert "deactivated" in await denied(resolver, make_principal(), retired.id)
    assert "deactivated" in await denied(resolver, make_principal(agent=retired.id), None)
    # Another org's agent reads exactly like a missing one: nothing leaks across orgs.
    assert await denied(resolver, make_principal(org="acme"), foreign.id) == f"agent {foreign.id!r} is not registered in this org{UNREGISTERED_HINT}"


async def test_the_resolved_agent_is_attributed_to_the_call(agents, resolver, make_principal) -> None:
    named = agents.create("acme", "ci")
    with audit.attributing() as attribution:
        await resolver.resolve_agent(make_principal(), named.id)
    assert attribution.agent_id == named.id


def test_minting_a_token_registers_its_agent_in_its_org(engine, agents) -> None:
    tokens = TokenStore(engine)
    tokens.create("acme", "ann", "laptop", ["memory:write"])
    tokens.create("acme", "bob", "laptop", ["memory:write"])  # already there: unchanged
    tokens.create("globex", "gus", "laptop", ["memory:write"])  # same id, another org: its own agent

    assert [(a.id, a.name, a.active) for a in in_org(agents, "acme")] == [("laptop", "laptop", True)]
    assert [a.org_id for a in in_org(agents, "globex")] == ["globex"]


def test_no_token_is_minted_for_a_deactivated_agent(engine, agents) -> None:
    tokens = TokenStore(engine)
    tokens.create("acme", "ann", "laptop", ["memory:write"])
    agents.deactivate("laptop", "acme")
    with pytest.raises(ValueError, match="deactivated"):
        tokens.create("acme", "ann", "laptop", ["memory:write"])
    assert tokens.count() == 1


def test_deactivating_an_id_that_several_orgs_use_needs_the_org(engine, agents) -> None:
    for org in ("acme", "globex"):  # ids chosen at token time may repeat across orgs
        TokenStore(engine).create(org, "u", "shared", ["memory:read"])

    assert len(agents.deactivate("shared")) == 2
    assert all(a.active for a in in_org(agents, "acme") + in_org(agents, "globex"))
    assert [a.org_id for a in agents.deactivate("shared", "globex")] == ["globex"]
    assert [a.active for a in in_org(agents, "globex")] == [False]


@pytest.fixture
def run_cli(settings: Settings, monkeypatch):
    """Run ``memory-bank ...`` against this test's database; returns (exit code, stdout, stderr)."""
    monkeypatch.setenv("MEMORY_BANK_DATABASE_URL", settings.database_url)
    get_settings.cache_clear()
    runner = CliRunner()

    def run(*args: str) -> tuple[int, str, str]:
        result = runner.invoke(cli, list(args))
        return result.exit_code, result.stdout, result.stderr

    yield run
    get_settings.cache_clear()


def test_cli_creates_lists_and_deactivates_agents(run_cli) -> None:
    code, out, _ = run_cli("agent", "create", "--org", "acme", "--name", "laptop")
    agent_id = out.strip()
    assert code == 0 and len(agent_id) == 21 and "\n" not in agent_id

    code, out, _ = run_cli("agent", "list", "--org", "acme")
    assert code == 0 and out.split("\t")[:3] == [agent_id, "laptop", "active"]

    assert run_cli("agent", "deactivate", agent_id)[0] == 0
    assert run_cli("agent", "list", "--org", "acme")[1].split("\t")[2] == "inactive"

    code, _, err = run_cli("agent", "deactivate", "ghost")
    assert code == 1 and "error (not_found): no agent 'ghost'" in " ".join(err.split())  # the README's one-line form


def test_cli_agent_list_of_an_org_without_agents_says_so_on_stderr(run_cli) -> None:
    """It printed nothing at all, where ``token list`` says it has no tokens (a new user's pass)."""
    run_cli("agent", "create", "--org", "globex", "--name", "theirs")
    code, out, err = run_cli("agent", "list", "--org", "acme")
    assert (code, out) == (0, "")
    assert " ".join(err.split()) == "No agents in org 'acme', active or deactivated (agent create registers one)."
    assert "No agents" not in run_cli("agent", "list", "--org", "globex")[2]


def test_cli_token_create_refuses_a_new_agent_id_with_a_dot_segment(run_cli) -> None:
    """``token create --agent ..`` registered an agent no request could name (a hostile pass)."""
    code, out, err = run_cli("token", "create", "--org", "acme", "--user", "ada", "--agent", "a/../b", "--permissions", "memory:write")
    assert (code, out) == (2, "")
    assert "has the path segment '..'" in " ".join(err.split()) and "URLs remove" in " ".join(err.split())
    assert run_cli("agent", "list", "--org", "acme")[1] == ""


def test_cli_deactivates_an_agent_stored_with_a_dot_segment_id(run_cli, engine) -> None:
    """One registered before the rule is still the CLI's to stop, and gets tokens as before."""
    with transaction(engine, write=True) as session:
        session.add(AgentRow(org_id="acme", id="..", name="old"))
    assert run_cli("token", "create", "--org", "acme", "--user", "ada", "--agent", "..", "--permissions", "memory:write")[0] == 0
    assert run_cli("agent", "deactivate", "..")[0] == 0
    assert run_cli("agent", "list", "--org", "acme")[1].split("\t")[:3] == ["..", "old", "inactive"]


def test_cli_token_create_registers_the_named_agent_and_says_so_when_it_is_new(run_cli) -> None:
    code, out, err = run_cli("token", "create", "--org", "acme", "--user", "ada", "--agent", "laptop", "--permissions", "memory:write")
    assert code == 0 and out.startswith("mb_")
    assert "agent 'laptop' was new in org 'acme': registered it" in " ".join(err.split())  # a misspelt --agent shows
    assert run_cli("agent", "list", "--org", "acme")[1].split("\t")[:3] == ["laptop", "laptop", "active"]
    code, _, err = run_cli("token", "create", "--org", "acme", "--user", "bo", "--agent", "laptop", "--permissions", "memory:read")
    assert code == 0 and "was new" not in err


def test_cli_token_create_for_an_agent_s_name_exits_2_naming_its_id(run_cli) -> None:
    """``agent create --name ci-bot`` prints a random id; ``--agent ci-bot`` registered a second
    agent of that name (a new user's pass)."""
    agent_id = run_cli("agent", "create", "--org", "acme", "--name", "ci-bot")[1].strip()
    code, out, err = run_cli("token", "create", "--org", "acme", "--user", "ci", "--agent", "ci-bot", "--permissions", "memory:read")
    assert (code, out) == (2, "") and f"use '{agent_id}'" in " ".join(err.split())
    assert [line.split("\t")[0] for line in run_cli("agent", "list", "--org", "acme")[1].splitlines()] == [agent_id]
