"""REST routes of the agent-side jobs: ``POST /v1/sessions/{id}/reflect`` and ``POST /v1/context/fit``
answer like the SDK (real app, real DuckDB file)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from stratamem import Memory, TenantContext

ACME = TenantContext(tenant_id="acme", principal="test")
S = {"user_id": "alice", "session_id": "s1"}


def h(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_reflect_route(client: TestClient, make_key: Callable[..., str], server_mem: Memory) -> None:
    server_mem.add(ACME, "Always answer in British English", layer="session", identifiers=S)
    key = make_key()
    first = client.post("/v1/sessions/s1/reflect", headers=h(key), json={"userId": "alice", "agentId": "coder"})
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["created"] == 2 and body["method"] == "rules" and body["agent_id"] == "coder"
    again = client.post("/v1/sessions/s1/reflect", headers=h(key), json={"userId": "alice", "agentId": "coder"})
    assert again.json()["unchanged"] is True
    rules = server_mem.list(ACME, "agent", identifiers={"agent_id": "coder", "user_id": "alice"}).memories
    assert {m.metadata["kind"] for m in rules} == {"reflection_summary", "reflection_rule"}
    closed = client.post("/v1/sessions/s1/close", headers=h(key), json={"userId": "alice", "agentId": "coder"})
    assert closed.status_code == 200 and closed.json()["reflection"]["unchanged"] is True
    missing = client.post("/v1/sessions/s1/reflect", headers=h(key), json={})
    assert missing.status_code in (400, 422), missing.text


def test_fit_context_route(client: TestClient, make_key: Callable[..., str], server_mem: Memory) -> None:
    big = "\n".join(f"row {i}: ok" for i in range(600))
    messages = [
        {"role": "user", "content": "run the report"},
        {"role": "tool", "content": big},
        *({"role": "user", "content": f"message {i}"} for i in range(4)),
    ]
    res = client.post(
        "/v1/context/fit",
        headers=h(make_key()),
        json={"messages": messages, "maxTokens": 100000, "identifiers": {"userId": "alice", "sessionId": "s1"}},
    )
    assert res.status_code == 200, res.text
    body = res.json()
    pointer = body["pruned"][0]["memory_id"]
    assert pointer in body["messages"][1]["content"] and body["tokens_after"] < body["tokens_before"]
    stored = server_mem.get(ACME, pointer)
    assert stored is not None and stored.content == big
