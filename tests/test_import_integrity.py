"""Import keeps every account whole: line ends, timestamps, version chains, agents, ids, races (both backends)."""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memory_bank.security.principal import Principal
from memory_bank.store import importer
from memory_bank.store.agents import AgentStore
from memory_bank.store.importer import copy_id
from memory_bank.transfer import export_line, parse_records
from support.transfer import chains, exported, exported_rows, ndjson

LINE_BREAKERS = "\u2028\u2029\u0085"
MISSING = "ZZZZZZZZZZZZZZZZZZZZZ"


@pytest.fixture
def ann(make_client) -> TestClient:
    return make_client("acme", "ann")


@pytest.fixture
def gus(make_client) -> TestClient:
    return make_client("globex", "gus")


def rules(response) -> list[tuple[str, str]]:
    assert response.status_code == 422, response.text
    return [(e["field"], e["rule"]) for e in response.json()["errors"]]


def one(ann: TestClient, content: str = "the deploy target is eu-west", **fields: Any) -> dict[str, Any]:
    response = ann.post("/v1/memory", json={"content": content, **fields})
    assert response.status_code == 201
    return response.json()


# -- line ends (U+0085, U+2028, U+2029) ------------------------------------------------


def test_line_breaking_characters_are_escaped_on_export_and_every_backup_restores(ann: TestClient, gus: TestClient) -> None:
    kept = one(ann, f"a{LINE_BREAKERS}b", tags=[f"t{LINE_BREAKERS}"], contexts=[{"snippet": LINE_BREAKERS, "origin": "\u2028"}])
    gone = one(ann, f"forget {LINE_BREAKERS}")
    assert ann.delete(f"/v1/memory/{gone['id']}").status_code == 204
    text = ann.get("/v1/memory/export").text
    assert not set(LINE_BREAKERS) & set(text)
    assert len(text.splitlines()) == 2  # any line splitter reads it line for line

    assert gus.post("/v1/memory/import", content=text).json() == {"imported": 2, "skipped": 0}
    assert chains(exported(gus)) == chains(exported(ann))
    assert {r["content"] for r in exported(gus)} == {kept["content"], gone["content"]}


def test_an_export_written_with_raw_line_separators_still_imports(ann: TestClient, gus: TestClient) -> None:
    one(ann, f"x{LINE_BREAKERS}y")
    raw = ndjson(exported(ann))  # ensure_ascii=False: the characters themselves, as older exports wrote them
    assert set(LINE_BREAKERS) <= set(raw)
    assert gus.post("/v1/memory/import", content=raw).json() == {"imported": 1, "skipped": 0}


# -- schema-valid records the database cannot hold ---------------------------------------


@pytest.mark.parametrize(
    "moment", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "0999-12-31T23:59:59Z", "0500-06-01T00:00:00"]
)
@pytest.mark.parametrize("field", ["created_at", "updated_at", "deleted_at"])
def test_a_timestamp_outside_the_storable_range_is_422_naming_the_line(ann: TestClient, gus: TestClient, field: str, moment: str) -> None:
    record = {**_record(ann), field: moment}
    assert rules(gus.post("/v1/memory/import", content=ndjson([record]))) == [("/body/line/1", "range")]
    assert exported(gus) == []


def test_timestamps_at_the_range_ends_and_with_offsets_are_stored_in_utc(ann: TestClient, gus: TestClient) -> None:
    first = {**_record(ann), "created_at": "1000-01-01T00:00:00Z", "updated_at": "9999-12-31T22:59:59.999999-01:00"}
    assert gus.post("/v1/memory/import", content=ndjson([first])).status_code == 200
    (stored,) = exported(gus)
    assert stored["created_at"].startswith("1000-01-01T00:00:00") and stored["updated_at"].startswith("9999-12-31T23:59:59.999999")


def _record(ann: TestClient) -> dict[str, Any]:
    one(ann)
    return exported(ann)[0]


@pytest.mark.parametrize(("version", "rule"), [(2**31, "maximum"), (2**63, "maximum"), (2**31 - 1, "version")])
def test_a_version_past_the_column_or_out_of_its_chain_is_422(ann: TestClient, gus: TestClient, version: int, rule: str) -> None:
    record = {**_record(ann), "version": version}
    assert rules(gus.post("/v1/memory/import", content=ndjson([record]))) == [("/body/line/1", rule)]


# -- version chains, checked against what is stored --------------------------------------


@pytest.fixture
def patched(ann: TestClient) -> list[dict[str, Any]]:
    """ann's export of one chain of two versions."""
    v1 = one(ann, "editor is vim")
    assert ann.patch(f"/v1/memory/{v1['id']}", json={"content": "editor is helix"}).status_code == 200
    return exported(ann)


def test_a_parent_that_the_file_leaves_current_is_refused(gus: TestClient, patched: list[dict[str, Any]]) -> None:
    v1, v2 = patched
    broken = [{**v1, "superseded_at": None}, v2]
    assert rules(gus.post("/v1/memory/import", content=ndjson(broken))) == [("/body/line/1", "superseded")]
    stale = [v1]  # superseded, but nothing in the file supersedes it
    assert rules(gus.post("/v1/memory/import", content=ndjson(stale))) == [("/body/line/1", "superseded")]


def test_superseding_a_version_already_superseded_in_the_account_is_a_fork(ann: TestClient, patched: list[dict[str, Any]]) -> None:
    v1, v2 = patched
    rival = {**v2, "id": MISSING, "content": "editor is emacs"}
    response = ann.post("/v1/memory/import", content=ndjson([rival]))
    assert rules(response) == [("/body/line/1", "fork")]
    assert v1["id"] in response.json()["errors"][0]["message"]  # named as the file names it
    assert exported(ann) == patched


def test_superseding_a_deleted_memory_is_refused(ann: TestClient) -> None:
    gone = one(ann, "temporary")
    assert ann.delete(f"/v1/memory/{gone['id']}").status_code == 204
    (tombstone,) = exported(ann)
    successor = {**tombstone, "id": MISSING, "supersedes_id": gone["id"], "version": 2, "deleted_at": None}
    assert rules(ann.post("/v1/memory/import", content=ndjson([successor]))) == [("/body/line/1", "deleted")]


def test_a_successor_of_a_stored_head_retires_it_and_continues_its_chain(ann: TestClient) -> None:
    head = one(ann, "shell is bash")
    (record,) = exported(ann)
    successor = {**record, "id": MISSING, "supersedes_id": head["id"], "version": 2, "content": "shell is fish"}
    assert ann.post("/v1/memory/import", content=ndjson([successor])).json() == {"imported": 1, "skipped": 0}
    history = ann.get(f"/v1/memory/{head['id']}/history").json()
    assert [(h["content"], h["superseded_at"] is None) for h in history] == [("shell is bash", False), ("shell is fish", True)]


def test_a_second_current_value_at_a_keypath_is_refused(ann: TestClient, gus: TestClient) -> None:
    assert ann.put("/v1/memory/keypaths/user.shell", json={"content": "bash"}).status_code == 201
    (value,) = exported(ann)
    twin = {**value, "id": MISSING, "content": "fish"}
    assert rules(gus.post("/v1/memory/import", content=ndjson([value, twin]))) == [("/body/line/2", "keypath")]
    assert rules(ann.post("/v1/memory/import", content=ndjson([twin]))) == [("/body/line/1", "keypath")]
    assert ann.get("/v1/memory/keypaths/user.shell").json()["content"] == "bash"


# -- agents ------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", [None, "retired"])
def test_an_import_needs_an_active_agent_of_the_org(make_client, engine, ann: TestClient, agent: str | None) -> None:
    body = ndjson([_record(ann)])
    writer = make_client("globex", "gus", agent=agent)
    if agent is not None:
        assert len(AgentStore(engine).deactivate(agent, "globex")) == 1
    response = writer.post("/v1/memory/import", content=body)
    assert response.status_code == 403 and response.json()["code"] == "permission_denied"


def test_imported_agent_ids_are_kept_only_when_registered_in_the_org(make_client, make_token, ann: TestClient) -> None:
    make_token("globex", "someone", agent="helper")  # registers "helper" in globex
    record = _record(ann)
    records = [
        {**record, "agent_id": "helper"},
        {**record, "id": "A" * 21, "content": "made up", "agent_id": "ghost"},
        {**record, "id": "B" * 21, "content": "no agent", "agent_id": None},
    ]
    gus = make_client("globex", "gus", agent="importer")
    assert gus.post("/v1/memory/import", content=ndjson(records)).status_code == 200
    assert {r["content"]: r["agent_id"] for r in exported(gus)} == {
        record["content"]: "helper",
        "made up": "importer",
        "no agent": "importer",
    }


# -- ids: unknown and foreign alike ------------------------------------------------------


def test_errors_name_ids_as_the_file_does(gus: TestClient, patched: list[dict[str, Any]]) -> None:
    orphan = {**patched[1], "supersedes_id": MISSING}
    (error,) = gus.post("/v1/memory/import", content=ndjson([orphan])).json()["errors"]
    assert error["rule"] == "link" and MISSING in error["message"]


def test_unknown_and_foreign_ids_are_renamed_alike(ann: TestClient, gus: TestClient) -> None:
    foreign = _record(ann)
    unknown = {**foreign, "id": MISSING, "content": "never seen anywhere"}
    assert gus.post("/v1/memory/import", content=ndjson([foreign, unknown])).json() == {"imported": 2, "skipped": 0}
    principal = Principal(token_id="-", org_id="globex", user_id="gus", agent_id=None, permissions=frozenset())
    assert {r["id"] for r in exported(gus)} == {copy_id(principal, foreign["id"]), copy_id(principal, MISSING)}


def test_copy_ids_do_not_collide_across_owners_whose_names_join_alike() -> None:
    a = Principal(token_id="-", org_id="acme:a", user_id="b", agent_id=None, permissions=frozenset())
    b = Principal(token_id="-", org_id="acme", user_id="a:b", agent_id=None, permissions=frozenset())
    assert copy_id(a, MISSING) != copy_id(b, MISSING)


# -- concurrent imports of one file ------------------------------------------------------


def test_concurrent_imports_of_one_file_write_it_once_and_never_fail(app, make_token, patched: list[dict[str, Any]]) -> None:
    records = patched + [{**patched[0], "id": new, "content": f"note {new}", "superseded_at": None} for new in _ids(60)]
    body = ndjson(records)
    token = make_token("globex", "gus")
    statuses: list[int] = []

    def run() -> None:
        with TestClient(app, headers={"Authorization": f"Bearer {token}"}) as client:
            statuses.append(client.post("/v1/memory/import", content=body).status_code)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200] * 4
    with TestClient(app, headers={"Authorization": f"Bearer {token}"}) as client:
        assert chains(exported(client)) == chains(records)


def _ids(n: int) -> list[str]:
    return [uuid.uuid4().hex[:21] for _ in range(n)]


def test_problem_documents_list_a_bounded_number_of_bad_lines(gus: TestClient) -> None:
    response = gus.post("/v1/memory/import", content="{\n" * 500)
    problem = response.json()
    assert response.status_code == 422 and len(problem["errors"]) == 100 and problem["detail"].startswith("500 line(s)")
    assert "the first 100 of 500 errors are listed" in problem["detail"]
    assert json.dumps(problem)  # still one small document


def test_a_line_that_fails_several_rules_counts_once(gus: TestClient) -> None:
    """A record superseding itself fails three rules on one line: the detail counts lines, as it says."""
    one(gus)
    record = json.loads(gus.get("/v1/memory/export").text.splitlines()[0])
    itself = "B" * 21
    line = json.dumps(record | {"id": itself, "version": 2, "supersedes_id": itself})
    problem = gus.post("/v1/memory/import", content=line + "\n").json()
    assert problem["status"] == 422 and len(problem["errors"]) > 1 and problem["detail"].startswith("1 line(s) are invalid")


# -- bounded transactions ----------------------------------------------------------------


def test_an_import_is_written_in_batches_of_whole_chains_and_a_rerun_completes_it(store, engine, monkeypatch) -> None:
    """A failure after the first batch leaves whole chains only; importing again writes the rest."""
    owner = Principal(token_id="t", org_id="acme", user_id="ann", agent_id=None, permissions=frozenset())
    v1, _ = store.create(owner, {"content": "v1"})
    store.patch(owner, v1.id, {"content": "v2"})
    for n in range(3):
        store.create(owner, {"content": f"single {n}"})
    lines = "".join(export_line(row) for row in exported_rows(store, owner, 100))
    records = parse_records(lines, None)

    monkeypatch.setattr(importer, "BATCH_ROWS", 2)
    batches: list[list[str]] = []
    write = importer.write_batch

    def second_fails(session, principal, batch, rows):  # noqa: ANN001
        batches.append([p.record.fields["content"] for p in batch])
        if len(batches) == 2:
            raise RuntimeError("the database went away")
        return write(session, principal, batch, rows)

    target = Principal(token_id="t", org_id="globex", user_id="gus", agent_id=None, permissions=frozenset())
    monkeypatch.setattr(importer, "write_batch", second_fails)
    with pytest.raises(RuntimeError):
        store.import_records(target, records)
    assert batches[0] == ["v1", "v2"]  # a chain is never split between transactions
    written = exported_rows(store, target, 100)
    assert sorted(r.content for r in written) == ["v1", "v2"] and sum(r.superseded_at is None for r in written) == 1

    monkeypatch.setattr(importer, "write_batch", write)
    assert store.import_records(target, records) == (3, 2)



# -- a key given twice -------------------------------------------------------------------


@pytest.mark.parametrize("repeat", ['"content": "a second reading"', '"user_id": "eve"', '"deleted_at": null'])
def test_a_line_with_a_key_given_twice_is_refused_as_a_rest_body_is(ann: TestClient, gus: TestClient, repeat: str) -> None:
    """The model keeps the later member; a reviewer of the file may read the first. REST refuses
    such a body (``uniqueKeys``), so the import refuses the line, naming it, and writes nothing."""
    line = json.dumps(exported(ann)[0] if one(ann) else {})
    answer = gus.post("/v1/memory/import", content=f"{line[:-1]}, {repeat}}}\n")
    assert rules(answer) == [("/body/line/1", "uniqueKeys")]
    assert exported(gus) == []
