"""Event history contract (``hygiene/history.py``): one memory's events, per-day trends and the
recorded maintenance runs read the same on every provider (DuckDB, in-memory, PostgreSQL), bound to
the caller's tenant; a memory outside the caller's grant (or another tenant's) answers like a missing one."""

from __future__ import annotations

from datetime import timedelta

import pytest

from stratamem import Memory, MemoryError, TenantContext
from stratamem.model import Grant

U1 = {"user_id": "u1"}


def test_memory_events_newest_first_with_who_and_what(store: Memory, tenant: TenantContext) -> None:
    added = store.add(tenant, "the user prefers tea", layer="user", identifiers=U1)
    other = store.add(tenant, "the user lives in Oslo", layer="user", identifiers=U1)
    store.update(tenant, added.memory.id, metadata={"tags": ["drinks"]})
    out = store.memory_events(tenant, added.memory.id)
    assert out.memory_id == added.memory.id
    assert [e.event for e in out.events] == ["update", "create"]
    assert all(e.memory_id == added.memory.id and e.principal == "u1" for e in out.events)
    assert out.events[1].layer == "user" and out.events[0].ts >= out.events[1].ts
    assert [e.event for e in store.memory_events(tenant, added.memory.id, limit=1).events] == ["update"]
    assert [e.event for e in store.memory_events(tenant, other.memory.id).events] == ["create"]
    with pytest.raises(MemoryError) as err:
        store.memory_events(tenant, added.memory.id, limit=0)
    assert err.value.code.value == "INVALID_PARAMS"


def test_memory_events_of_a_denied_or_foreign_memory_look_missing(
    store: Memory, tenant: TenantContext, other_tenant: TenantContext
) -> None:
    added = store.add(tenant, "the user prefers tea", layer="user", identifiers=U1)
    bob = TenantContext(tenant_id=tenant.tenant_id, principal="bob", grant=Grant.parse(["user:bob"]))
    codes = []
    for ctx, mid in ((bob, added.memory.id), (other_tenant, added.memory.id), (tenant, "no-such-id")):
        with pytest.raises(MemoryError) as err:
            store.memory_events(ctx, mid)
        codes.append((err.value.code.value, str(err.value).replace(mid, "ID")))
    assert len(set(codes)) == 1 and codes[0][0] == "MEMORY_NOT_FOUND"


def test_access_history_lists_each_search_and_get_that_returned_the_memory(
    store: Memory, tenant: TenantContext
) -> None:
    tea = store.add(tenant, "the user prefers green tea", layer="user", identifiers=U1)
    oslo = store.add(tenant, "the user lives in Oslo", layer="user", identifiers=U1)
    found = store.search(tenant, "green tea", identifiers=U1, limit=1)
    assert [r.memory.id for r in found.results] == [tea.memory.id]
    store.get(tenant, tea.memory.id)
    store.search(tenant, "quantum chromodynamics", identifiers=U1, threshold=0.99)  # a miss reads nothing
    history = store.memory_events(tenant, tea.memory.id, events=["access"]).events
    assert [e.details["operation"] for e in history] == ["get", "search"]
    assert all(e.event == "access" and e.principal == "u1" and e.layer == "user" for e in history)
    search_ev = history[1].details
    assert search_ev["rank"] == 1 and isinstance(search_ev["search_id"], str)
    assert "green tea" not in str([e.model_dump() for e in history])  # neither content nor query text
    # the access rows sit in the memory's full history, newest first, and the kinds filter keeps them apart
    assert [e.event for e in store.memory_events(tenant, tea.memory.id).events] == ["access", "access", "create"]
    assert [e.event for e in store.memory_events(tenant, tea.memory.id, events=["create", "update"]).events] == [
        "create"
    ]
    assert store.memory_events(tenant, oslo.memory.id, events=["access"]).events == []
    assert store.get(tenant, tea.memory.id).access_count == 2  # the same reads the statistics count
    with pytest.raises(MemoryError) as err:
        store.memory_events(tenant, tea.memory.id, events=["nonsense"])
    assert err.value.code.value == "INVALID_PARAMS"
    # switched off, reads log only their search row (the access statistics still count)
    logged = len(store.memory_events(tenant, tea.memory.id, events=["access"]).events)
    store.hygiene.configure(access_history=False)
    store.search(tenant, "green tea", identifiers=U1, limit=1)
    assert len(store.memory_events(tenant, tea.memory.id, events=["access"]).events) == logged == 3
    assert store.get(tenant, tea.memory.id).access_count == 4


def test_event_trends_count_writes_searches_rejections_per_day(
    store: Memory, tenant: TenantContext, other_tenant: TenantContext
) -> None:
    store.policies.set(tenant, deny_patterns=["forbidden"])
    a = store.add(tenant, "the user prefers tea", layer="user", identifiers=U1)
    store.update(tenant, a.memory.id, metadata={"tags": ["x"]})
    store.search(tenant, "tea", identifiers=U1)
    with pytest.raises(MemoryError):
        store.add(tenant, "a forbidden thing", layer="user", identifiers=U1)
    store.add(other_tenant, "someone else's write", layer="user", identifiers=U1)
    trends = store.event_trends(tenant, days=7)
    assert len(trends.days) == 7
    assert [d.day for d in trends.days] == [trends.days[0].day + timedelta(days=i) for i in range(7)]
    today = trends.days[-1]
    assert (today.writes, today.searches, today.rejections) == (2, 1, 1)
    # the write-gate decisions one by one
    assert (today.created, today.updated, today.deduplicated, today.deleted) == (1, 1, 0, 0)
    assert (today.ignored, today.rejected) == (0, 1)
    store.process(tenant, "I prefer green tea", identifiers=U1)  # created
    store.process(tenant, "I prefer green tea!", identifiers=U1)  # merged into it: dedupe + update
    store.process(tenant, "hi", identifiers=U1)  # ignored
    today = store.event_trends(tenant, days=1).days[-1]
    assert (today.created, today.deduplicated, today.updated, today.ignored, today.rejected) == (2, 1, 2, 1, 1)
    assert all((d.writes, d.searches, d.rejections) == (0, 0, 0) for d in trends.days[:-1])
    other = store.event_trends(other_tenant, days=1).days
    assert (other[0].writes, other[0].searches) == (1, 0)


def test_maintenance_runs_are_recorded_per_tenant(
    store: Memory, tenant: TenantContext, other_tenant: TenantContext
) -> None:
    store.add(tenant, "the user prefers tea", layer="user", identifiers=U1)
    assert store.maintenance_runs(tenant).runs == []
    store.maintain(tenants=[tenant.tenant_id])
    store.maintain(tenants=[tenant.tenant_id])
    runs = store.maintenance_runs(tenant).runs
    assert len(runs) == 2 and runs[0].ts >= runs[1].ts
    assert all(r.outcome == "ok" and r.errors == {} and r.duration_s >= 0 for r in runs)
    assert len(store.maintenance_runs(tenant, limit=1).runs) == 1
    assert store.maintenance_runs(other_tenant).runs == []
