"""Agent resolution through the API: every write is attributed to an active agent of the caller's org."""

from __future__ import annotations

from memory_bank.store.agents import AgentStore


def test_an_agentless_token_cannot_write_without_naming_an_agent(make_client) -> None:
    client = make_client("acme", "ann", agent=None)
    for response in (
        client.post("/v1/memory", json={"content": "no agent here"}),
        client.put("/v1/memory/keypaths/user.editor", json={"content": "vim"}),
    ):
        assert response.status_code == 403
        assert response.json()["code"] == "permission_denied"
    assert client.get("/v1/memory").json()["items"] == []


def test_an_agentless_token_may_write_as_a_registered_agent_of_its_org(app, make_client) -> None:
    agent = AgentStore(app.state.engine).create("acme", "ci")
    client = make_client("acme", "ann", agent=None)
    response = client.post("/v1/memory", json={"content": "built by ci", "agent_id": agent.id})
    assert response.status_code == 201 and response.json()["agent_id"] == agent.id


def test_the_tokens_agent_wins_over_the_body(make_client) -> None:
    client = make_client("acme", "ann", agent="laptop")
    response = client.post("/v1/memory", json={"content": "from the laptop", "agent_id": "someone-else"})
    assert response.status_code == 201 and response.json()["agent_id"] == "laptop"


def test_unknown_inactive_and_cross_org_agents_are_denied(app, make_client) -> None:
    agents = AgentStore(app.state.engine)
    other_org_agent = agents.create("globex", "spy")
    retired = agents.create("acme", "retired")
    agents.deactivate(retired.id, "acme")
    client = make_client("acme", "ann", agent=None)
    for agent_id in ("never-registered", other_org_agent.id, retired.id):
        response = client.post("/v1/memory", json={"content": f"as {agent_id}", "agent_id": agent_id})
        assert response.status_code == 403, agent_id
        assert response.json()["code"] == "permission_denied"


def test_a_deactivated_agents_token_can_no_longer_write(app, make_client) -> None:
    client = make_client("acme", "ann", agent="laptop")
    saved = client.post("/v1/memory", json={"content": "before retirement"}).json()
    AgentStore(app.state.engine).deactivate("laptop", "acme")
    assert client.post("/v1/memory", json={"content": "after retirement"}).status_code == 403
    assert client.patch(f"/v1/memory/{saved['id']}", json={"content": "changed"}).status_code == 403
    assert client.get(f"/v1/memory/{saved['id']}").status_code == 200
