"""Operations surface: /metrics behind an optional token, failed authentication rate limited per
client address, and repeated failures folded into aggregated audit lines."""

from __future__ import annotations

import time
from collections.abc import Callable

from fastapi.testclient import TestClient

from stratamem import Memory


def test_metrics_token(make_client: Callable[..., TestClient]) -> None:
    open_client = make_client()
    assert open_client.get("/metrics").status_code == 200
    guarded = make_client(metrics_token="scrape-secret-123")
    r = guarded.get("/metrics")
    assert r.status_code == 401 and r.json()["code"] == "UNAUTHORIZED"
    assert guarded.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    ok = guarded.get("/metrics", headers={"Authorization": "Bearer scrape-secret-123"})
    assert ok.status_code == 200 and "stratamem" in ok.text


def test_failed_auth_is_rate_limited_per_address(
    make_client: Callable[..., TestClient], make_key: Callable[..., str]
) -> None:
    client = make_client(auth_failure_rate_per_second=0.01, auth_failure_burst=3)
    good = make_key()
    for _ in range(3):
        r = client.get("/v1/memories", headers={"X-API-Key": "smk_0000000000000000_" + "x" * 40})
        assert r.status_code == 401
    r = client.get("/v1/memories", headers={"X-API-Key": "smk_0000000000000000_" + "x" * 40})
    assert r.status_code == 429 and r.json()["code"] == "RATE_LIMITED"
    assert r.json()["details"]["scope"] == "auth_failure" and int(r.headers["Retry-After"]) >= 1
    # the address stays refused, whatever it presents, until its bucket refills
    assert client.get("/v1/memories", headers={"X-API-Key": good}).status_code == 429
    # another server (another address budget) is unaffected
    other = make_client()
    assert other.get("/v1/memories", headers={"X-API-Key": good}).status_code == 200


def test_repeated_failures_are_aggregated_in_the_audit(
    make_client: Callable[..., TestClient], server_mem: Memory
) -> None:
    client = make_client(auth_failure_audit_window_s=0.5)
    before = len(server_mem.engine.audit.recent())
    for _ in range(10):
        assert client.get("/v1/memories", headers={"X-API-Key": "nope"}).status_code == 401
    lines = server_mem.engine.audit.recent()[before:]
    denied = [r for r in lines if r.outcome == "denied" and r.code == "INVALID_TENANT_CONTEXT"]
    assert len(denied) == 1 and denied[0].details["client"] == "testclient"
    time.sleep(0.6)
    assert client.get("/v1/memories", headers={"X-API-Key": "nope"}).status_code == 401
    denied = [r for r in server_mem.engine.audit.recent()[before:] if r.code == "INVALID_TENANT_CONTEXT"]
    assert len(denied) == 2 and denied[1].details["repeated"] == 9


def test_tenant_admin_reads_only_its_tenants_series(
    make_client: Callable[..., TestClient], server_mem: Memory, make_key: Callable[..., str]
) -> None:
    from stratamem import TenantContext

    server_mem.add(TenantContext(tenant_id="acme"), "a note", layer="user", identifiers={"user_id": "u1"})
    server_mem.add(TenantContext(tenant_id="globex"), "b note", layer="team", identifiers={"team_id": "t1"})
    client = make_client(metrics_token="scrape-secret-123")
    admin = make_key("acme", "admin")
    r = client.get("/metrics", headers={"Authorization": f"Bearer {admin}"})
    assert r.status_code == 200
    assert 'stratamem_tenant_memories{tenant="acme",layer="user"} 1' in r.text
    assert "globex" not in r.text and "memory_operations_total" not in r.text
    writer = make_key("acme", "writer")
    assert client.get("/metrics", headers={"X-API-Key": writer}).status_code == 403
