"""``maintain``: every task, metrics, consolidation of near-duplicates, integrity repair, scheduler."""

from __future__ import annotations

import time

from prometheus_client import REGISTRY

from stratamem import Memory, TenantContext
from stratamem.lifecycle.config import ConsolidationConfig, LifecycleConfig

from .conftest import Clock

U = {"user_id": "u1"}


def test_consolidation_merges_near_duplicates_over_trigger(lmem: Memory, acme: TenantContext) -> None:
    lmem.lifecycle.config = LifecycleConfig(
        consolidation=ConsolidationConfig(max_memories_before_trigger=3, similarity_threshold=0.95)
    )
    dup_a = lmem.add(
        acme, "User prefers dark mode", layer="user", identifiers=U, provenance={"agentId": "a1"}
    ).memory.id
    dup_b = lmem.add(acme, "User prefers dark mode!", layer="user", identifiers=U).memory.id
    other = lmem.add(acme, "Team standup is at nine", layer="user", identifiers=U).memory.id
    report = lmem.maintain(tenants=[acme.tenant_id])
    assert report.tenants[0].consolidated == 0  # 3 entries: not above the trigger
    lmem.add(acme, "Quarterly report due in March", layer="user", identifiers=U)
    report = lmem.maintain(tenants=[acme.tenant_id])
    assert report.tenants[0].consolidated == 1
    assert lmem.get(acme, dup_a) is None and lmem.get(acme, dup_b) is None and lmem.get(acme, other) is not None
    merged = [m for m in lmem.list(acme, "user", identifiers=U).memories if m.provenance.compacted_from_ids]
    assert len(merged) == 1
    assert merged[0].content == "User prefers dark mode!"
    assert sorted(merged[0].provenance.compacted_from_ids or []) == sorted([dup_a, dup_b])
    assert merged[0].provenance.agent_id == "a1"


def test_maintain_reports_metrics_and_integrity(lmem: Memory, acme: TenantContext, clock: Clock) -> None:
    mid = lmem.add(acme, "to be forgotten", layer="user", identifiers=U).memory.id
    lmem.feedback(acme, [mid], -1.0)
    lmem.delete(acme, mid)  # hard delete leaves an orphan feedback row
    before = REGISTRY.get_sample_value("stratamem_lifecycle_maintenance_items_total", {"task": "integrity"}) or 0.0
    count_before = (
        REGISTRY.get_sample_value("stratamem_lifecycle_maintenance_duration_seconds_count", {"task": "ttl_purge"})
        or 0.0
    )
    report = lmem.maintain(tenants=[acme.tenant_id])
    rep = report.tenants[0]
    assert rep.integrity_repaired == 1 and rep.errors == {}
    assert REGISTRY.get_sample_value("stratamem_lifecycle_maintenance_items_total", {"task": "integrity"}) == before + 1
    assert (
        REGISTRY.get_sample_value("stratamem_lifecycle_maintenance_duration_seconds_count", {"task": "ttl_purge"})
        == count_before + 1
    )
    assert lmem.maintain(tenants=[acme.tenant_id]).tenants[0].integrity_repaired == 0
    assert lmem.engine.audit.recent(action="maintain")[-1].tenant_id == acme.tenant_id


def test_scheduler_runs_in_background(local_lmem: Memory, acme: TenantContext) -> None:
    # The scheduler sweeps every tenant of the store: not run on the shared PostgreSQL database.
    lmem = local_lmem
    lmem.add(acme, "x", layer="user", identifiers=U)
    sched = lmem.lifecycle.schedule(0.05)
    try:
        deadline = time.monotonic() + 10
        while sched.last_report is None and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        sched.stop()
    assert sched.last_report is not None and sched.last_report.tenants[0].tenant_id == acme.tenant_id


def test_maintain_prunes_access_events_past_retention(
    lmem: Memory, acme: TenantContext, globex: TenantContext, clock: Clock
) -> None:
    """Every search/get result logs an ``access`` event; ``maintain`` deletes those older than
    ``access_history_days`` (per tenant), keeps the other kinds, and reports the count."""
    lmem.lifecycle.config = LifecycleConfig(access_history_days=30)
    p = lmem.engine.provider
    mid = lmem.add(acme, "User prefers dark mode", layer="user", identifiers=U).memory.id
    other = lmem.add(globex, "User prefers dark mode", layer="user", identifiers=U).memory.id
    assert len(lmem.search(acme, "dark mode", identifiers=U, threshold=0.0).results) == 1
    assert lmem.get(acme, mid) is not None
    assert lmem.get(globex, other) is not None
    clock.advance(days=20)
    assert lmem.get(acme, mid) is not None  # 20 days old at the run below: kept
    clock.advance(days=11)  # the first accesses are now 31 days old
    before = (
        REGISTRY.get_sample_value("stratamem_lifecycle_maintenance_items_total", {"task": "access_retention"}) or 0.0
    )
    rep = lmem.maintain(tenants=[acme.tenant_id]).tenants[0]
    assert (rep.access_events_pruned, rep.errors) == (2, {})
    assert (
        REGISTRY.get_sample_value("stratamem_lifecycle_maintenance_items_total", {"task": "access_retention"})
        == before + 2
    )
    counts = p.count_memory_events(acme.tenant_id)
    assert (counts["access"], counts["search"], counts["create"]) == (1, 1, 1)
    assert p.count_memory_events(globex.tenant_id)["access"] == 1  # not in this run
    # the run is listed with its count (the console's Health page reads these)
    assert lmem.maintenance_runs(acme).runs[0].access_events_pruned == 2
    assert lmem.maintain(tenants=[acme.tenant_id]).tenants[0].access_events_pruned == 0

    # None keeps every access event
    lmem.lifecycle.config = LifecycleConfig(access_history_days=None)
    clock.advance(days=365)
    assert lmem.maintain(tenants=[acme.tenant_id]).tenants[0].access_events_pruned == 0
    assert p.count_memory_events(acme.tenant_id)["access"] == 1
