"""A deleted org memory is gone for the other members of its org, history included (both backends)."""

from __future__ import annotations


def test_another_member_cannot_read_a_deleted_org_memory_through_its_history(make_client) -> None:
    ann, bob = make_client("acme", "ann"), make_client("acme", "bob")
    first = ann.post("/v1/memory", json={"content": "the old door code is 4471", "scope": "org"}).json()
    second = ann.patch(f"/v1/memory/{first['id']}", json={"content": "the door code is 9182"}).json()
    assert [m["id"] for m in bob.get(f"/v1/memory/{first['id']}/history").json()] == [first["id"], second["id"]]

    assert ann.delete(f"/v1/memory/{second['id']}").status_code == 204

    for memory_id in (first["id"], second["id"]):
        assert bob.get(f"/v1/memory/{memory_id}").status_code == 404
        history = bob.get(f"/v1/memory/{memory_id}/history")
        assert history.status_code == 404 and history.json()["code"] == "not_found"
        assert "door code" not in history.text
        # the owner keeps the record, tombstone included, as the spec says
        own = ann.get(f"/v1/memory/{memory_id}/history").json()
        assert [m["id"] for m in own] == [first["id"], second["id"]] and own[-1]["deleted_at"] is not None


def test_a_live_org_memorys_history_is_still_shared(make_client) -> None:
    ann, bob = make_client("acme", "ann"), make_client("acme", "bob")
    memory = ann.post("/v1/memory", json={"content": "standup moved to 10:00", "scope": "org"}).json()
    assert bob.get(f"/v1/memory/{memory['id']}/history").status_code == 200
    assert make_client("other", "eve").get(f"/v1/memory/{memory['id']}/history").status_code == 404
