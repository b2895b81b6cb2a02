"""TTL (seed 002 §5.5, §16.6), soft delete with deferred purge, decay (seed 000 DecayConfig)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from stratamem import Memory, TenantContext
from stratamem.lifecycle.config import DecayConfig, LifecycleConfig
from stratamem.lifecycle.decay import relevance
from stratamem.model import Layer

from .conftest import T0, Clock

U = {"user_id": "u1"}


def test_expired_never_returned_then_purged(lmem: Memory, acme: TenantContext, clock: Clock) -> None:
    short = lmem.add(
        acme, "the wifi code is tulip", layer="user", identifiers=U, expires_at=T0 + timedelta(hours=1)
    ).memory.id
    lasting = lmem.add(acme, "the wifi code is rose", layer="user", identifiers=U).memory.id
    clock.advance(hours=2)
    assert lmem.get(acme, short) is None
    assert [r.memory.id for r in lmem.search(acme, "wifi code", identifiers=U, threshold=0.5).results] == [lasting]
    assert [m.id for m in lmem.list(acme, "user", identifiers=U).memories] == [lasting]
    assert lmem.maintain(tenants=[acme.tenant_id]).tenants[0].purged == 0  # still inside the 1-day purge delay
    clock.advance(days=1)
    report = lmem.maintain(tenants=[acme.tenant_id])
    assert report.tenants[0].purged == 1
    assert lmem.engine.provider.get(acme.tenant_id, short, T0, statuses=("active",)) is None  # really gone


def test_update_sets_expiry(lmem: Memory, acme: TenantContext, clock: Clock) -> None:
    mid = lmem.add(acme, "promo ends soon", layer="user", identifiers=U).memory.id
    lmem.update(acme, mid, expires_at=T0 + timedelta(minutes=5))
    clock.advance(minutes=6)
    assert lmem.get(acme, mid) is None


def test_soft_delete_restore_and_deferred_purge(lmem: Memory, acme: TenantContext, clock: Clock) -> None:
    a = lmem.add(acme, "draft plan", layer="user", identifiers=U).memory.id
    assert lmem.soft_delete(acme, [a, "missing"]) == [a]
    assert lmem.get(acme, a) is None and lmem.list(acme, "user", identifiers=U).total_count == 0
    stored = lmem.engine.provider.get(acme.tenant_id, a, clock.now, statuses=("deleted",))
    assert stored is not None and stored.deleted_at == T0 and stored.status == "deleted"
    assert lmem.restore(acme, [a]) == [a]
    assert lmem.get(acme, a) is not None
    lmem.soft_delete(acme, [a])
    clock.advance(days=29)
    assert lmem.maintain(tenants=[acme.tenant_id]).tenants[0].purged == 0
    clock.advance(days=1)
    assert lmem.maintain(tenants=[acme.tenant_id]).tenants[0].purged == 1
    assert lmem.restore(acme, [a]) == []


def test_relevance_formula() -> None:
    cfg = DecayConfig(rate_per_day=0.1, archive_threshold=0.5)
    from stratamem.model import LayerIdentifiers, MemoryEntry

    entry = MemoryEntry(
        id="m",
        tenant_id="t",
        content="c",
        layer=Layer.USER,
        identifiers=LayerIdentifiers(user_id="u"),
        metadata={"relevance": 0.8},
        created_at=T0,
        updated_at=T0,
        etag="e",
        content_hash="h",
    )
    assert relevance(entry, T0 + timedelta(days=2), cfg) == pytest.approx(0.8 * 0.9**2)
    entry.metadata["decayFactor"] = 0.5
    assert relevance(entry, T0 + timedelta(days=1), cfg) == pytest.approx(0.4)


def test_decay_archives_but_stays_listable(lmem: Memory, acme: TenantContext, clock: Clock) -> None:
    lmem.lifecycle.config = LifecycleConfig(
        decay=DecayConfig(rate_per_day=0.1, archive_threshold=0.5, exempt_layers=(Layer.ORG,))
    )
    old = lmem.add(acme, "old build notes", layer="user", identifiers=U).memory.id
    policy = lmem.add(acme, "old build policy", layer="org", identifiers={"org_id": "o1"}).memory.id
    clock.advance(days=6)  # 0.9^6 = 0.531 > 0.5
    fresh = lmem.add(acme, "new build notes", layer="user", identifiers=U).memory.id
    assert lmem.maintain(tenants=[acme.tenant_id]).tenants[0].archived == 0
    clock.advance(days=1)  # 0.9^7 = 0.478 < 0.5
    assert lmem.maintain(tenants=[acme.tenant_id]).tenants[0].archived == 1
    assert lmem.get(acme, old) is None and lmem.get(acme, policy) is not None
    hits = [r.memory.id for r in lmem.search(acme, "build notes", identifiers=U, threshold=0.5).results]
    assert old not in hits and fresh in hits
    listed = {e.id: e.status for e in lmem.lifecycle.list(acme, "user", U)}
    assert listed == {old: "archived", fresh: "active"}
    assert lmem.restore(acme, [old]) == [old] and lmem.get(acme, old) is not None
