"""Seed 002 §8.3 over REST: the scope and promotedFromId of a memory cannot be patched (400 INVALID_PARAMS)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from stratamem import Memory, TenantContext


def test_patch_cannot_change_scope_or_promoted_from_id(
    client: TestClient, make_key: Callable[..., str], server_mem: Memory
) -> None:
    key = make_key()
    t = TenantContext(tenant_id="acme", principal="alice")
    src = server_mem.add(
        t, "Deploys happen on Fridays", layer="session", identifiers={"user_id": "alice", "session_id": "s1"}
    ).memory
    promoted = server_mem.promote(t, src.id, "user")
    headers = {"X-API-Key": key}
    r = client.patch(f"/v1/memories/{promoted.id}", headers=headers, json={"metadata": {"promotedFromId": "forged"}})
    assert r.status_code == 400
    assert r.json() == {
        "code": "INVALID_PARAMS",
        "operation": "update",
        "retryable": False,
        "message": "metadata.promotedFromId is immutable after creation; promote or compact to "
        "create a new entry instead",
        "details": {"field": "metadata.promotedFromId", "reason": "immutable", "id": promoted.id},
    }
    for body in ({"layer": "org"}, {"identifiers": {"userId": "mallory"}}):
        r = client.patch(f"/v1/memories/{promoted.id}", headers=headers, json=body)
        assert r.status_code == 400 and r.json()["code"] == "INVALID_PARAMS", r.text
    ok = client.patch(f"/v1/memories/{promoted.id}", headers=headers, json={"content": "Deploys happen on Thursdays"})
    assert ok.status_code == 200, ok.text
    got = server_mem.get(t, promoted.id)
    assert got is not None
    assert (got.layer.value, got.identifiers.user_id, got.metadata["promotedFromId"], got.version) == (
        "user",
        "alice",
        src.id,
        2,
    )
