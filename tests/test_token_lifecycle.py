"""The token lifecycle in the store, on both backends: rotation, revocation, expiry, last use, migration 0005."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine

from memory_bank.errors import Conflict, Unauthorized
from memory_bank.security.tokens import LAST_USED_RESOLUTION, digest
from memory_bank.store import migrations
from memory_bank.store.agents import UnusableAgent, AgentStore
from memory_bank.store.database import create_schema
from memory_bank.store.tables import TokenRow
from memory_bank.store.tokens import TokenStore
from support import backends

READ = ["memory:read"]

#: A step on one of three tokens: mint it (again: a new token), rotate it, or revoke it.
STEPS = st.lists(st.tuples(st.sampled_from(["create", "rotate", "revoke"]), st.integers(0, 2)), min_size=1, max_size=12)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_any_sequence_of_create_rotate_and_revoke_keeps_exactly_the_live_secrets_valid(engine: Engine, steps) -> None:
    tokens = TokenStore(engine)
    ids: list[str] = []  # slot -> the token id it last minted
    live: dict[str, str | None] = {}  # token id -> its one valid secret, None once revoked
    issued: list[str] = []
    for action, slot in steps:
        if action == "create" or slot >= len(ids):
            secret, row = tokens.create("acme", "ann", None, READ)
            ids.append(row.id)
            live[row.id] = secret
        elif action == "rotate":
            rotated = tokens.rotate(ids[slot])
            assert (rotated is None) == (live[ids[slot]] is None)
            if rotated is not None:
                secret = rotated[0]
                assert rotated[1].id == ids[slot] and rotated[1].permissions == READ
                live[ids[slot]] = secret
        else:
            assert tokens.revoke(ids[slot]) == (live[ids[slot]] is not None)
            live[ids[slot]] = None
            continue
        issued.append(secret)
    valid = set(live.values()) - {None}
    for secret in issued:
        principal = tokens.verify(secret)
        assert (principal is not None) == (secret in valid)
        if principal is not None:
            assert live[principal.token_id] == secret


def test_rotating_one_token_at_once_from_many_threads_leaves_one_live_secret(engine: Engine) -> None:
    tokens = TokenStore(engine)
    original, row = tokens.create("acme", "ann", None, READ)

    def rotate(_: int) -> str | None:
        try:
            rotated = tokens.rotate(row.id)
        except Conflict:
            return None
        assert rotated is not None
        return rotated[0]

    with ThreadPoolExecutor(6) as pool:
        secrets = [s for s in pool.map(rotate, range(12)) if s is not None]
    assert secrets, "at least one rotation succeeds"
    assert tokens.verify(original) is None
    valid = [secret for secret in secrets if tokens.verify(secret) is not None]
    stored = tokens.find(row.id)
    assert stored is not None and len(valid) == 1 and digest(valid[0]) == stored.token_hash


def test_a_rotation_overtaken_by_a_revocation_hands_out_no_secret(engine: Engine) -> None:
    """Rotations racing a revocation: once it has committed, none is answered with a secret (one
    was answered 200 with ``revoked_at`` set and a secret that never worked, a hostile pass)."""
    tokens = TokenStore(engine)
    for _ in range(5):
        _, row = tokens.create("acme", "ann", None, READ)

        def rotate_or_revoke(n: int) -> tuple[str, TokenRow] | bool | None:
            if n % 2:
                return tokens.revoke(row.id)
            try:
                return tokens.rotate(row.id)
            except Conflict:
                return None

        with ThreadPoolExecutor(10) as pool:
            outcomes = list(pool.map(rotate_or_revoke, range(10)))
        assert sum(outcome is True for outcome in outcomes) == 1, "exactly one revocation finds the token live"
        rotated = [outcome for outcome in outcomes if isinstance(outcome, tuple)]
        assert all(answered.revoked_at is None for _, answered in rotated)
        assert all(tokens.verify(secret) is None for secret, _ in rotated)


def test_tokens_minted_at_once_for_one_new_agent_all_work_and_register_it_once(engine: Engine) -> None:
    """The first token for an agent registers it; 20 at once raced to insert the same row, and on
    MariaDB all but one were a 500 (a hostile pass). A deactivated agent still gets none."""
    tokens = TokenStore(engine)
    with ThreadPoolExecutor(20) as pool:
        minted = list(pool.map(lambda n: tokens.create("acme", f"user-{n}", "night-shift", READ)[0], range(20)))
    assert all(tokens.verify(secret) is not None for secret in minted)
    agents = AgentStore(engine)
    assert [agent.id for agent in agents.page("acme", limit=10)[0]] == ["night-shift"]
    agents.deactivate("night-shift", "acme")
    with pytest.raises(UnusableAgent):
        tokens.create("acme", "ann", "night-shift", READ)


def test_an_expired_token_is_refused_saying_so_and_one_expiring_later_works(engine: Engine) -> None:
    tokens = TokenStore(engine)
    now = datetime.now(UTC)
    expired, _ = tokens.create("acme", "ann", None, READ, expires_at=now - timedelta(seconds=1))
    later, _ = tokens.create("acme", "ann", None, READ, expires_at=now + timedelta(hours=1))
    with pytest.raises(Unauthorized, match="expired at"):
        tokens.verify(expired)
    assert tokens.verify(later) is not None


def test_the_last_use_is_written_at_most_once_per_resolution(engine: Engine) -> None:
    tokens = TokenStore(engine)
    secret, row = tokens.create("acme", "ann", None, READ)
    assert row.last_used_at is None
    tokens.verify(secret)
    first = tokens.find(row.id).last_used_at  # type: ignore[union-attr]
    assert first is not None
    tokens.verify(secret)
    assert tokens.find(row.id).last_used_at == first  # type: ignore[union-attr]  # within the minute: no write

    stale = first - LAST_USED_RESOLUTION - timedelta(seconds=1)
    with engine.begin() as connection:
        connection.execute(sa.update(TokenRow.__table__).where(TokenRow.__table__.c.id == row.id).values(last_used_at=stale.replace(tzinfo=None)))
    tokens.verify(secret)
    assert tokens.find(row.id).last_used_at > first  # type: ignore[operator, union-attr]


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)])
def test_migration_0005_keeps_tokens_minted_before_it_working(backend: str, tmp_path: Path) -> None:
    old_secret = "mb_" + "x" * 43
    with backends.empty_database(backend, tmp_path) as engine:
        with engine.begin() as connection:
            command.upgrade(migrations._config(connection), "0004")
            connection.execute(
                sa.text(
                    "INSERT INTO token (id, token_hash, org_id, user_id, agent_id, permissions, created_at)"
                    " VALUES ('AAAAAAAAAAAAAAAAAAAAA', :hash, 'acme', 'ann', NULL, :permissions, :created)"
                ),
                {"hash": digest(old_secret), "permissions": '["memory:read"]', "created": datetime(2026, 1, 1)},
            )
        assert create_schema(engine) == ("0004", migrations.head())
        tokens = TokenStore(engine)
        principal = tokens.verify(old_secret)
        assert principal is not None and principal.permissions == frozenset(READ)
        row = tokens.find("AAAAAAAAAAAAAAAAAAAAA")
        assert row is not None and (row.name, row.prefix, row.expires_at) == (None, None, None)
        assert row.last_used_at is not None  # the verify above was its first recorded use
        rotated = tokens.rotate(row.id)
        assert rotated is not None and rotated[1].prefix == rotated[0][:9]
        assert tokens.verify(old_secret) is None and tokens.verify(rotated[0]) is not None
