"""List cursors: every string is a position or a 422, over REST and MCP, and never a 500."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_bank.errors import DomainError, ErrorCode
from memory_bank.store.keyset import MEMORIES
from support.mcp_live import LiveServer, live_server, tool_problem

ID = re.compile(r"^[A-Za-z0-9_-]{21}$")
IDS = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-", min_size=21, max_size=21)
#: Any zone a time can be written in: offsets up to a day either way, to the second.
ZONES = st.integers(min_value=-86399, max_value=86399).map(lambda s: timezone(timedelta(seconds=s)))
#: Times at the edges of what datetime can hold are the ones that broke the decoder.
TIMES = st.datetimes(min_value=datetime.min, max_value=datetime.max, timezones=ZONES)


def wrap(payload: object) -> str:
    """A cursor as the server spells them: base64url JSON, unpadded."""
    raw = json.dumps(payload, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


#: Cursors that look issued: a time in any zone and a text id (including lone surrogates).
CRAFTED = st.builds(lambda t, i: wrap([t.isoformat(), i]), TIMES, st.one_of(IDS, st.text(max_size=30)))
ANY_CURSOR = st.one_of(st.text(max_size=80), CRAFTED)


def assert_refused_at_cursor(error: DomainError) -> None:
    assert error.code is ErrorCode.invalid_params
    assert [e.field for e in error.errors] == ["cursor"]


@given(ANY_CURSOR)
def test_a_cursor_decodes_to_a_utc_position_or_is_refused(cursor: str) -> None:
    try:
        created_at, memory_id = MEMORIES.decode(cursor)
    except DomainError as error:
        assert_refused_at_cursor(error)
        return
    assert created_at.utcoffset() == timedelta(0)
    assert ID.match(memory_id)


@given(st.datetimes(timezones=st.just(UTC)), IDS)
def test_an_issued_cursor_decodes_to_its_key(created_at: datetime, memory_id: str) -> None:
    assert MEMORIES.decode(MEMORIES.encode((created_at, memory_id))) == (created_at, memory_id)


@pytest.mark.parametrize(
    "cursor",
    [
        wrap(["0001-01-01T00:00:00+05:00", "A" * 21]),
        wrap(["9999-12-31T23:59:59-05:00", "A" * 21]),
        wrap(["2026-01-01T00:00:00+00:00", "\ud800" + "A" * 20]),
        wrap([1767225600, "A" * 21]),
        wrap(["2026-01-01T00:00:00", "A" * 21]),
    ],
    ids=["year-1-east", "year-9999-west", "lone-surrogate", "number", "no-zone"],
)
def test_the_reported_cursors_are_refused(cursor: str) -> None:
    with pytest.raises(DomainError) as refused:
        MEMORIES.decode(cursor)
    assert_refused_at_cursor(refused.value)


@pytest.fixture
def reader(client: TestClient, make_token) -> Iterator[dict[str, str]]:
    """A token with a few memories to page through, so a decoded cursor reaches the database."""
    headers = {"Authorization": f"Bearer {make_token('acme', 'ann')}"}
    for n in range(3):
        assert client.post("/v1/memory", json={"content": f"fact {n}"}, headers=headers).status_code == 201
    yield headers


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cursor=ANY_CURSOR)
def test_listing_with_any_cursor_is_a_page_or_a_422(client: TestClient, reader: dict[str, str], cursor: str) -> None:
    response = client.get("/v1/memory", params={"cursor": cursor, "limit": 1}, headers=reader)
    assert response.status_code in (200, 422), response.text
    if response.status_code == 422:
        assert response.json()["code"] == "invalid_params"


@pytest.mark.parametrize(
    "when", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+00:00", "9999-12-31T23:59:59+00:00"]
)
def test_edge_times_are_a_422_or_a_page_on_the_database(client: TestClient, reader: dict[str, str], when: str) -> None:
    response = client.get("/v1/memory", params={"cursor": wrap([when, "A" * 21])}, headers=reader)
    assert response.status_code in (200, 422), response.text
    if response.status_code == 422:
        assert response.json()["errors"][0]["field"] == "/query/cursor"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("cursor")) as live:
        yield live


@pytest.mark.parametrize(
    "cursor",
    [wrap(["0001-01-01T00:00:00+05:00", "A" * 21]), wrap(["2026-01-01T00:00:00+00:00", "\ud800" + "A" * 20])],
)
async def test_mcp_lists_with_a_crafted_cursor_as_invalid_params(server: LiveServer, cursor: str) -> None:
    async with server.client(server.token()) as mcp:
        result = await mcp.call_tool("execute_capability", {"name": "listMemories", "query": {"cursor": cursor}})
    problem = tool_problem(result)
    assert problem["code"] == "invalid_params", problem
    assert problem["errors"][0]["field"] == "/query/cursor"


def test_a_cursor_whose_id_ends_in_a_newline_is_refused() -> None:
    with pytest.raises(DomainError) as refused:
        MEMORIES.decode(wrap(["2026-01-01T00:00:00+00:00", "A" * 21 + "\n"]))
    assert_refused_at_cursor(refused.value)
