"""``forget_user`` on every provider (DuckDB file, in-memory, PostgreSQL): the user's memories and
their event rows are gone, other users' are kept."""

from __future__ import annotations

from stratamem import Memory, TenantContext


def test_forget_user_on_every_provider(lmem: Memory, acme: TenantContext) -> None:
    mine = [
        lmem.add(acme, f"Alice fact number {i}", layer="user", identifiers={"user_id": "alice"}).memory.id
        for i in range(3)
    ]
    mine.append(
        lmem.add(
            acme, "Alice session detail", layer="session", identifiers={"user_id": "alice", "session_id": "s1"}
        ).memory.id
    )
    kept = lmem.add(acme, "Bob fact", layer="user", identifiers={"user_id": "bob"}).memory.id
    lmem.feedback(acme, mine[:1], 1.0)
    lmem.engine.hygiene.events.flush()
    events_before = lmem.engine.provider.count_memory_events(acme.tenant_id)
    report = lmem.forget_user(acme, "alice")
    assert report.memories == 4 and report.events >= 4
    events_after = lmem.engine.provider.count_memory_events(acme.tenant_id)
    assert sum(v for k, v in events_after.items() if "." not in k) < sum(
        v for k, v in events_before.items() if "." not in k
    )
    assert all(lmem.get(acme, mid) is None for mid in mine)
    assert lmem.get(acme, kept) is not None
    assert lmem.list(acme, "user", identifiers={"user_id": "alice"}).total_count == 0
