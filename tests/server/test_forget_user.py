"""Right to be forgotten: ``forget_user`` over the SDK, the REST admin route and the CLI removes a
user's memories, graph rows, event rows and cached vectors, revokes their keys, and leaves others."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from stratamem import Memory, MemoryError, TenantContext
from stratamem.model import Grant
from stratamem.server.keys import create_key

from ..hygiene.test_safety import _raw_text
from .conftest import run_cli

ACME = TenantContext(tenant_id="acme", principal="ops")
ALICE_TEXTS = (
    "Alice Zamborski moved to Reykjavik",
    "Alice Zamborski drinks oolong tea",
    "Alice Zamborski session note about Reykjavik",
)


def _seed(mem: Memory) -> tuple[list[str], str]:
    alice = [
        mem.add(ACME, ALICE_TEXTS[0], layer="user", identifiers={"user_id": "alice"}).memory.id,
        mem.add(ACME, ALICE_TEXTS[1], layer="agent", identifiers={"user_id": "alice", "agent_id": "a1"}).memory.id,
        mem.add(ACME, ALICE_TEXTS[2], layer="session", identifiers={"user_id": "alice", "session_id": "s1"}).memory.id,
    ]
    for mid in alice:
        assert mem.get(ACME, mid) is not None  # access statistics and events of reads too
    mem.update(ACME, alice[0], metadata={"tags": ["moved"]})
    bob = mem.add(ACME, "Bob Quillfeather lives in Lisbon", layer="user", identifiers={"user_id": "bob"}).memory.id
    mem.add(TenantContext(tenant_id="globex"), ALICE_TEXTS[0], layer="user", identifiers={"user_id": "alice"})
    return alice, bob


def test_forget_user_in_the_sdk(open_mem: Callable[..., Memory], db_path: Path) -> None:
    mem = open_mem()
    alice, bob = _seed(mem)
    key = create_key(mem.engine.provider, "acme", "writer", identifiers={"user_id": "alice"})
    other_key = create_key(mem.engine.provider, "acme", "writer", identifiers={"user_id": "bob"})
    before = mem.graph.stats(ACME)
    restricted = TenantContext(tenant_id="acme", grant=Grant.parse([], {"user_id": "alice"}))
    with pytest.raises(MemoryError) as exc:  # needs a tenant-wide grant
        mem.forget_user(restricted, "alice")
    assert exc.value.code.value == "FORBIDDEN"
    report = mem.forget_user(ACME, "alice")
    assert report.memories == 3 and report.keys_revoked == 1
    assert report.graph_memory_nodes == 3 and report.graph_entities >= 1 and report.graph_edges >= 1
    assert report.events >= 4  # at least the create and update rows of alice's memories
    after = mem.graph.stats(ACME)
    assert before.memory_nodes - after.memory_nodes == 3 and after.memory_nodes == 1
    assert all(mem.get(ACME, mid) is None for mid in alice) and mem.get(ACME, bob) is not None
    assert mem.list(TenantContext(tenant_id="globex")).total_count == 1  # another tenant's alice is not touched
    assert mem.engine.provider.api_key_get(key.record.key_id).revoked_at is not None  # type: ignore[union-attr]
    assert mem.engine.provider.api_key_get(other_key.record.key_id).revoked_at is None  # type: ignore[union-attr]
    assert mem.forget_user(ACME, "alice").memories == 0
    mem.close()
    raw = _raw_text(db_path)
    assert ALICE_TEXTS[1] not in raw and ALICE_TEXTS[2] not in raw
    assert raw.count(ALICE_TEXTS[0]) == 2  # only globex's copy (its memory and its graph node)
    assert "oolong" not in raw.lower() and "Bob Quillfeather lives in Lisbon" in raw
    assert not any(mid in raw for mid in alice)  # no event, graph or feedback row names them


def test_forget_user_over_rest_and_cli(server_mem: Memory, client: TestClient, db_path: Path) -> None:
    alice, bob = _seed(server_mem)
    admin = create_key(server_mem.engine.provider, "acme", "admin").key
    writer = create_key(server_mem.engine.provider, "acme", "writer").key
    r = client.delete("/v1/admin/users/alice", headers={"X-API-Key": writer})
    assert r.status_code == 403
    r = client.delete("/v1/admin/users/alice", headers={"X-API-Key": admin})
    assert r.status_code == 200, r.text
    assert r.json()["memories"] == 3 and r.json()["userId"] == "alice"
    assert client.get(f"/v1/memories/{alice[0]}", headers={"X-API-Key": admin}).status_code == 404
    assert client.get(f"/v1/memories/{bob}", headers={"X-API-Key": admin}).status_code == 200
    server_mem.close()
    out = run_cli("forget-user", "--db", str(db_path), "--tenant", "acme", "--user-id", "bob", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["memories"] == 1
